import type { ClaimedDelivery } from '../../src/delivery/claim';
import { HeldDeliveries } from '../../src/delivery/hold';
import type { SubscriptionRow } from '../../src/domain/webhooks/subscriptions/row';

const NOW = 1_000_000;
const LEASE_END = NOW + 45_000;

let nextId = 1;
function claimed(subscriptionId: string, leaseEnd = LEASE_END): ClaimedDelivery {
  const id = nextId++;
  return {
    id,
    createdAt: 0,
    claimToken: 'worker',
    eventId: `event-${id}`,
    eventType: 'product.created',
    attempts: 0,
    payload: '{}',
    subscription: { id: subscriptionId } as SubscriptionRow,
    receiverScopes: new Set(),
    traceParent: null,
    traceState: null,
    leaseEnd,
  };
}

const ids = (deliveries: readonly ClaimedDelivery[]) => deliveries.map((delivery) => delivery.id);

describe('HeldDeliveries', () => {
  it("starts at most a subscription's attempts at once, and the next of it as soon as one ends", () => {
    const held = new HeldDeliveries({ concurrency: 32, perSubscription: 2, leaseNeededMs: 20_000 });
    const backlog = Array.from({ length: 5 }, () => claimed('a'));
    held.add(backlog);
    const first = held.startable(NOW);
    expect(ids(first.start)).toEqual(ids(backlog.slice(0, 2)));
    expect(held.startable(NOW).start).toEqual([]);
    expect(held).toMatchObject({ onTheWire: 2, held: 5 });
    held.ended(backlog[0] as ClaimedDelivery);
    expect(ids(held.startable(NOW).start)).toEqual([backlog[2]?.id]);
    expect(held).toMatchObject({ onTheWire: 2, held: 4 });
  });

  it("keeps to the worker's attempts at once, and gives subscriptions turns for its slots", () => {
    const held = new HeldDeliveries({ concurrency: 3, perSubscription: 4, leaseNeededMs: 20_000 });
    const a = Array.from({ length: 4 }, () => claimed('a'));
    const b = Array.from({ length: 4 }, () => claimed('b'));
    held.add([...a, ...b]);
    expect(ids(held.startable(NOW).start)).toEqual([a[0], b[0], a[1]].map((delivery) => delivery?.id));
    held.ended(a[0] as ClaimedDelivery);
    // b was served less recently than a.
    expect(ids(held.startable(NOW).start)).toEqual([b[1]?.id]);
  });

  it('does not start a delivery whose lease would end before its attempt could, and lets it go', () => {
    const held = new HeldDeliveries({ concurrency: 8, perSubscription: 4, leaseNeededMs: 20_000 });
    const short = claimed('a', NOW + 19_999);
    const enough = claimed('a', NOW + 20_000);
    held.add([short, enough]);
    const { start, release } = held.startable(NOW);
    expect(ids(start)).toEqual([enough.id]);
    expect(ids(release)).toEqual([short.id]);
    expect(held.held).toBe(1);
  });

  it('hands over what waits unsent, keeping count of what is on the wire', () => {
    const held = new HeldDeliveries({ concurrency: 8, perSubscription: 1, leaseNeededMs: 20_000 });
    const backlog = [claimed('a'), claimed('a'), claimed('b')];
    held.add(backlog);
    const { start } = held.startable(NOW);
    expect(ids(start)).toEqual([backlog[0]?.id, backlog[2]?.id]);
    expect(ids(held.takeWaiting())).toEqual([backlog[1]?.id]);
    expect(held).toMatchObject({ onTheWire: 2, held: 2 });
    for (const delivery of start) held.ended(delivery);
    expect(held).toMatchObject({ onTheWire: 0, held: 0 });
    expect(held.startable(NOW).start).toEqual([]);
  });
});
