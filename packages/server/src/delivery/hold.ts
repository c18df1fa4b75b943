import type { ClaimedDelivery } from './claim';

export interface HeldLimits {
  /** Attempts on the wire at once, whatever their subscription. */
  readonly concurrency: number;
  /** Attempts of one subscription on the wire at once. */
  readonly perSubscription: number;
  /**
   * The lease an attempt needs left to start: as long as the longest attempt, and some. A delivery
   * whose lease ends sooner is not sent; it is let go (`releaseClaims`), so that its next attempt is
   * never made while another worker may already hold it.
   */
  readonly leaseNeededMs: number;
}

/** What to do with held deliveries now: the attempts to start, and the deliveries to let go. */
export interface Startable {
  readonly start: ClaimedDelivery[];
  readonly release: ClaimedDelivery[];
}

/**
 * A worker's claimed deliveries: those waiting to be sent, by subscription in the order claimed, and
 * how many of each subscription's are on the wire. The worker holds a subscription's deliveries a
 * few times its attempts at once (db/webhook-claim-types.ts, `LEASES_AHEAD`), so that an answer is followed by the
 * next attempt at once, while answers are recorded and deliveries claimed in batches. Subscriptions
 * take turns for the worker's slots: the one served last goes to the back.
 */
export class HeldDeliveries {
  private readonly waiting = new Map<string, ClaimedDelivery[]>();
  private readonly wire = new Map<string, number>();
  private waitingCount = 0;
  private wireCount = 0;

  constructor(private readonly limits: HeldLimits) {}

  /** Attempts on the wire. */
  get onTheWire(): number {
    return this.wireCount;
  }

  /** Deliveries held: on the wire or waiting to be sent. */
  get held(): number {
    return this.wireCount + this.waitingCount;
  }

  add(deliveries: readonly ClaimedDelivery[]): void {
    for (const delivery of deliveries) {
      const subscriptionId = delivery.subscription.id;
      const queue = this.waiting.get(subscriptionId);
      if (queue) queue.push(delivery);
      else this.waiting.set(subscriptionId, [delivery]);
      this.waitingCount += 1;
    }
  }

  /**
   * Takes the attempts that may start at `now`, as many as there are slots for, counting them on the
   * wire; and the deliveries whose lease is too short to start, which are no longer held.
   */
  startable(now: number): Startable {
    const start: ClaimedDelivery[] = [];
    const release: ClaimedDelivery[] = [];
    for (const [subscriptionId, queue] of this.waiting) {
      while (queue.length > 0 && (queue[0] as ClaimedDelivery).leaseEnd - now < this.limits.leaseNeededMs) {
        release.push(queue.shift() as ClaimedDelivery);
        this.waitingCount -= 1;
      }
      if (queue.length === 0) this.waiting.delete(subscriptionId);
    }
    let served = true;
    while (served && this.wireCount < this.limits.concurrency) {
      served = false;
      for (const [subscriptionId, queue] of this.waiting) {
        if ((this.wire.get(subscriptionId) ?? 0) >= this.limits.perSubscription) continue;
        start.push(queue.shift() as ClaimedDelivery);
        this.waitingCount -= 1;
        this.wireCount += 1;
        this.wire.set(subscriptionId, (this.wire.get(subscriptionId) ?? 0) + 1);
        // To the back of the turns (or gone, with nothing left).
        this.waiting.delete(subscriptionId);
        if (queue.length > 0) this.waiting.set(subscriptionId, queue);
        served = true;
        break;
      }
    }
    return { start, release };
  }

  /** An attempt started by `startable` has ended: its slot is free. */
  ended(delivery: ClaimedDelivery): void {
    const subscriptionId = delivery.subscription.id;
    const count = (this.wire.get(subscriptionId) ?? 0) - 1;
    if (count > 0) this.wire.set(subscriptionId, count);
    else this.wire.delete(subscriptionId);
    this.wireCount -= 1;
  }

  /** Every delivery waiting to be sent, no longer held (the worker stops: they go back to the queue). */
  takeWaiting(): ClaimedDelivery[] {
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    this.waitingCount = 0;
    return all;
  }
}
