import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { until as poll } from '../../../../../tools/testbed/until';
import { createApp } from '../../../src/app';
import { engineOfHandle } from '../../../src/db/engine';
import { LEASES_AHEAD } from '../../../src/db/webhook-claims';
import { createDispatcher, type Dispatcher } from '../../../src/delivery/dispatcher';
import { fanOut } from '../../../src/delivery/fan-out';
import { createProduct as createProductAsStore } from '../../../src/domain/catalog/products/changes';
import { createCustomer } from '../../../src/domain/storefront/customers/changes';
import { placeOrder } from '../../../src/domain/storefront/orders/changes';
import { runHousekeeping } from '../../../src/jobs/housekeeping';
import { uninstall } from '../../../src/platform/installations';
import { createServices, type Services } from '../../../src/services/container';
import { insertProduct } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { createTestStore, localOnlyResolver, type StoreFixture, suiteHarness } from '../../support/harness';
import { shopperOf } from '../../support/storefront-fixtures';
import { expectWellFormedDelivery, type Receiver, verifyDelivery } from '../../support/webhook-receiver';
import {
  deliverySetup,
  installSubscriber,
  listSubscriptionsCall,
  patchSubscription,
  postAction,
  postReplay,
  type Subscriber,
  subscribe,
} from '../../support/webhooks';

const DAY_MS = 24 * 60 * 60 * 1000;
const SCHEDULE = [1000, 2000];

describe.each(testDatabases())('webhook delivery on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let receiver: Receiver;
  let services: Services;
  let dispatcher: Dispatcher;

  beforeAll(async () => {
    ({ receiver, services, dispatcher } = await deliverySetup(h, SCHEDULE));
  });

  const until = (condition: () => boolean) => poll(condition, { timeoutMs: 10_000, everyMs: 20, rethrow: true });

  /** Runs the dispatcher until nothing is due: what the loop does between two polls. */
  async function drain(): Promise<number> {
    let total = 0;
    for (let attempts = await dispatcher.runOnce(); attempts > 0; attempts = await dispatcher.runOnce()) total += attempts;
    return total;
  }

  interface Shop {
    store: StoreFixture;
    storeId: string;
    writer: string;
  }

  /** A store and an app that changes its catalog (another app than the subscribers). */
  async function shop(): Promise<Shop> {
    const store = await createTestStore(h);
    const writer = await installSubscriber(h, store, ['products:read', 'products:write', 'inventory:read', 'inventory:write']);
    return { store, storeId: store.store.id, writer: writer.token };
  }

  const hookPath = () => `/hooks/${randomUUID()}`;

  async function createProduct(s: Shop, name = 'Royal Oud'): Promise<Record<string, unknown>> {
    const response = await request(h.app)
      .post(`/stores/${s.storeId}/v1/products`)
      .set('Authorization', `Bearer ${s.writer}`)
      .set('Idempotency-Key', randomUUID())
      .send({ name, product_kind: 'physical' });
    if (response.status !== 201) throw new Error(`products.create answered ${response.status}: ${JSON.stringify(response.body)}`);
    return response.body.data as Record<string, unknown>;
  }

  async function subscribed(s: Shop, scopes: string[], eventTypes: string[]): Promise<{ subscriber: Subscriber; id: string; secret: string; path: string }> {
    const subscriber = await installSubscriber(h, s.store, scopes);
    const path = hookPath();
    const { id, secret } = await subscribe(h, s.storeId, subscriber, { endpoint_url: receiver.url(path), event_types: eventTypes });
    return { subscriber, id, secret, path };
  }

  const attemptsOf = (subscriptionId: string) => h.db('webhook_attempts').where({ subscription_id: subscriptionId }).orderBy('attempted_at').orderBy('attempt');
  const subscriptionOf = async (subscriptionId: string) => h.db('webhook_subscriptions').where({ id: subscriptionId }).first();

  it('delivers a product created by another app to each subscription whose types and scopes match, signed, valid against the spec, data as the API answered it', async () => {
    const s = await shop();
    const catalog = await subscribed(s, ['products:read'], ['product.created', 'product.updated']);
    const orders = await subscribed(s, ['orders:read'], ['order.created', 'app.uninstalled']);
    const elsewhere = await shop();
    const otherStore = await subscribed(elsewhere, ['products:read'], ['product.created']);
    const product = await createProduct(s);
    expect(await drain()).toBe(1);
    const [delivery, ...more] = receiver.receivedAt(catalog.path);
    expect(more).toEqual([]);
    const body = expectWellFormedDelivery(delivery!);
    expect(verifyDelivery(delivery!, catalog.secret, h.clock)).toEqual(body);
    expect(body).toMatchObject({ type: 'product.created', api_version: '2026-10-15', store_id: s.storeId, data: { product } });
    expect(delivery!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(delivery!.headers['webhook-timestamp']).toBe(String(Math.floor(h.clock.now() / 1000)));
    expect(receiver.receivedAt(orders.path)).toEqual([]);
    expect(receiver.receivedAt(otherStore.path)).toEqual([]);
    expect(await attemptsOf(catalog.id)).toEqual([
      expect.objectContaining({ event_id: body.id, event_type: 'product.created', attempt: 1, outcome: 'succeeded', response_status: 200, error: null }),
    ]);
    expect(await drain()).toBe(0); // delivered once
  });

  it('sends a stock change as inventory.adjusted (to inventory:read) and product.updated (to products:read), each with what the API answered', async () => {
    const s = await shop();
    const product = await createProduct(s);
    const stock = await subscribed(s, ['inventory:read'], ['inventory.adjusted']);
    const catalog = await subscribed(s, ['products:read'], ['product.updated']);
    await drain();
    const adjusted = await request(h.app)
      .post(`/stores/${s.storeId}/v1/products/${product.id}/inventory-adjustments`)
      .set('Authorization', `Bearer ${s.writer}`)
      .set('Idempotency-Key', randomUUID())
      .send({ delta: 5, reason: 'restock' });
    expect(adjusted.status).toBe(201);
    await drain();
    const [stockDelivery] = receiver.receivedAt(stock.path);
    expect(expectWellFormedDelivery(stockDelivery!)).toMatchObject({ type: 'inventory.adjusted', data: { adjustment: adjusted.body.data } });
    expect(receiver.receivedAt(stock.path)).toHaveLength(1);
    const [productDelivery] = receiver.receivedAt(catalog.path);
    expect(expectWellFormedDelivery(productDelivery!)).toMatchObject({ type: 'product.updated', data: { product: { id: product.id, resource_version: 2 } } });
  });

  it("sends an order's customer e-mail and mobile only to installations holding customers:read, as the API answers them", async () => {
    const s = await shop();
    const withoutContact = await subscribed(s, ['orders:read'], ['order.created']);
    const withContact = await subscribed(s, ['orders:read', 'customers:read'], ['order.created']);
    const shopper = shopperOf(h, s.storeId);
    const productId = await insertProduct(h.db, s.storeId, { status: 'active', price_state: 'ready', price_halalas: 5_000, quantity: 5 });
    const customer = await createCustomer(h.db, shopper, { name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' });
    await placeOrder(h.db, shopper, { customerId: customer.id, items: [{ productId, quantity: 1 }] });
    await drain();
    const [hidden] = receiver.receivedAt(withoutContact.path);
    const [shown] = receiver.receivedAt(withContact.path);
    const hiddenBody = verifyDelivery(hidden!, withoutContact.secret, h.clock) as { data: { order: { customer: object } } };
    const shownBody = verifyDelivery(shown!, withContact.secret, h.clock) as { id: string; data: { order: { id: number; customer: object } } };
    expectWellFormedDelivery(hidden!);
    expect(hiddenBody.data.order.customer).toEqual({ id: customer.id, name: 'Noura Al-Harbi' });
    expect(shownBody.data.order.customer).toEqual({ id: customer.id, name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' });
    expect(hidden!.body).not.toContain('noura@example.com');
    expect(hidden!.headers['webhook-id']).toBe(shownBody.id);
    const asApi = await request(h.app)
      .get(`/stores/${s.storeId}/v1/orders/${shownBody.data.order.id}`)
      .set('Authorization', `Bearer ${withoutContact.subscriber.token}`);
    expect(asApi.body.data).toEqual(hiddenBody.data.order);
  });

  it('signs with both secrets for 24 hours after a rotation (two v1 signatures, each verifies), then with the new one only', async () => {
    const s = await shop();
    const catalog = await subscribed(s, ['products:read'], ['product.created']);
    const rotated = await postAction(h.app, s.storeId, catalog.subscriber.token, catalog.id, 'rotate-secret');
    const newSecret = rotated.body.data.secret as string;
    await createProduct(s, 'During the overlap');
    await drain();
    const [during] = receiver.receivedAt(catalog.path);
    const signatures = String(during!.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    expect(signatures.every((signature) => signature.startsWith('v1,'))).toBe(true);
    const body = expectWellFormedDelivery(during!);
    expect(verifyDelivery(during!, newSecret, h.clock)).toEqual(body);
    expect(verifyDelivery(during!, catalog.secret, h.clock)).toEqual(body);
    h.clock.advance(DAY_MS + 1);
    // The writer's token has expired by now: the store itself changes the product.
    await createProductAsStore(h.db, { storeId: s.storeId, installationId: null, now: h.clock.now() }, { name: 'After the overlap', product_kind: 'physical' });
    await drain();
    const after = receiver.receivedAt(catalog.path)[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifyDelivery(after, newSecret, h.clock)).toEqual(expectWellFormedDelivery(after));
    expect(() => verifyDelivery(after, catalog.secret, h.clock)).toThrow();
  });

  it('retries a failing endpoint on the schedule with the same webhook-id, logging each attempt, then pauses the subscription with the reason; events while paused are not queued; resumed, only new events flow', async () => {
    const s = await shop();
    const catalog = await subscribed(s, ['products:read'], ['product.created']);
    receiver.answer(catalog.path, 500);
    await createProduct(s, 'Failing');
    expect(await drain()).toBe(1);
    expect(await drain()).toBe(0); // the retry is not due yet
    h.clock.advance(SCHEDULE[0]!);
    expect(await drain()).toBe(1);
    h.clock.advance(SCHEDULE[1]! - 1);
    expect(await drain()).toBe(0);
    h.clock.advance(1);
    expect(await drain()).toBe(1);
    const deliveries = receiver.receivedAt(catalog.path);
    expect(deliveries).toHaveLength(3);
    expect(new Set(deliveries.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
    expect(new Set(deliveries.map((delivery) => delivery.body)).size).toBe(1);
    const attempts = await attemptsOf(catalog.id);
    expect(attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.response_status, attempt.error])).toEqual([
      [1, 'failed', 500, 'The endpoint answered 500.'],
      [2, 'failed', 500, 'The endpoint answered 500.'],
      [3, 'failed', 500, 'The endpoint answered 500.'],
    ]);
    const listed = await listSubscriptionsCall(h.app, s.storeId, catalog.subscriber.token);
    expect(listed.body.data[0]).toMatchObject({ state: 'paused', paused_reason: expect.stringContaining('after 3 failed attempts') });

    receiver.answer(catalog.path, 200);
    await createProduct(s, 'While paused');
    h.clock.advance(60_000);
    expect(await drain()).toBe(0);
    const resumed = await patchSubscription(h.app, s.storeId, catalog.subscriber.token, catalog.id, { state: 'active' });
    expect(resumed.body.data).toMatchObject({ state: 'active', paused_reason: null });
    await createProduct(s, 'After resuming');
    expect(await drain()).toBe(1);
    const names = receiver.receivedAt(catalog.path).map((delivery) => (JSON.parse(delivery.body) as { data: { product: { name: string } } }).data.product.name);
    expect(names).toEqual(['Failing', 'Failing', 'Failing', 'After resuming']);
  });

  it("waits as long as a 429's or 503's Retry-After asks, never less than the schedule and at most its longest delay; other statuses' Retry-After is not heeded", async () => {
    // The longest delay (5 s) is the 4th: a Retry-After can stretch earlier ones up to it.
    const schedule = [1000, 1000, 1000, 5000];
    const retrying = createDispatcher(
      createServices({
        db: h.db,
        engine: engineOfHandle(h.db),
        clock: h.clock,
        rateLimits: { perInstallation: 1000, perClient: 1000 },
        webhooks: { environment: 'test', resolve: localOnlyResolver, retryScheduleMs: schedule },
      }),
      { random: () => 0.5 },
    );
    const attemptsDue = async (): Promise<number> => {
      let total = 0;
      for (let made = await retrying.runOnce(); made > 0; made = await retrying.runOnce()) total += made;
      return total;
    };
    /** The next attempt comes exactly `ms` after the last: not a millisecond before. */
    const nextAfter = async (ms: number) => {
      h.clock.advance(ms - 1);
      expect(await attemptsDue()).toBe(0);
      h.clock.advance(1);
      expect(await attemptsDue()).toBe(1);
    };
    const s = await shop();
    const catalog = await subscribed(s, ['products:read'], ['product.created']);
    receiver.answer(catalog.path, 429, { 'Retry-After': '3' });
    await createProduct(s, 'Rate limited');
    expect(await attemptsDue()).toBe(1);
    receiver.answer(catalog.path, 503, { 'Retry-After': new Date(h.clock.now() + 3000 + 3_600_000).toUTCString() });
    await nextAfter(3000); // asked 3 s, over the schedule's 1 s
    receiver.answer(catalog.path, 500, { 'Retry-After': '4' });
    await nextAfter(5000); // asked an hour: the schedule's longest delay
    receiver.answer(catalog.path, 429, { 'Retry-After': '1' });
    await nextAfter(1000); // a 500's Retry-After is not heeded
    receiver.answer(catalog.path, 503, { 'Retry-After': '2' });
    await nextAfter(5000); // asked less than the schedule's own delay
    h.clock.advance(60_000);
    expect(await attemptsDue()).toBe(0);
    expect((await attemptsOf(catalog.id)).map((attempt) => attempt.response_status)).toEqual([429, 503, 500, 429, 503]);
    expect(await subscriptionOf(catalog.id)).toMatchObject({ state: 'paused' }); // a Retry-After does not extend the schedule
  });

  it('revokes the subscription when the endpoint answers 410, and sends it nothing more', async () => {
    const s = await shop();
    const catalog = await subscribed(s, ['products:read'], ['product.created']);
    receiver.answer(catalog.path, 410);
    await createProduct(s, 'Gone');
    await createProduct(s, 'Also gone');
    await drain();
    expect((await subscriptionOf(catalog.id)).state).toBe('revoked');
    await createProduct(s, 'After');
    h.clock.advance(60_000);
    await drain();
    expect(receiver.receivedAt(catalog.path).length).toBeLessThanOrEqual(2);
    expect(await h.db('webhook_deliveries').where({ subscription_id: catalog.id, state: 'pending' })).toEqual([]);
    const listed = await listSubscriptionsCall(h.app, s.storeId, catalog.subscriber.token);
    expect(listed.body.data[0]).toMatchObject({ state: 'revoked' });
  });

  it('stops deliveries at once when the subscription is deleted, queued ones included', async () => {
    const s = await shop();
    const catalog = await subscribed(s, ['products:read'], ['product.created']);
    await createProduct(s);
    expect((await fanOut(services)).deliveries).toBe(1);
    expect(await h.db('webhook_deliveries').where({ subscription_id: catalog.id, state: 'pending' })).toHaveLength(1);
    const deleted = await request(h.app)
      .delete(`/stores/${s.storeId}/v1/webhook-subscriptions/${catalog.id}`)
      .set('Authorization', `Bearer ${catalog.subscriber.token}`);
    expect(deleted.status).toBe(200);
    await drain();
    expect(receiver.receivedAt(catalog.path)).toEqual([]);
    expect(await h.db('webhook_deliveries').where({ subscription_id: catalog.id })).toEqual([expect.objectContaining({ state: 'cancelled' })]);
  });

  it('sends app.uninstalled to the removed installation only, although its tokens are revoked, and nothing after it', async () => {
    const s = await shop();
    const leaving = await subscribed(s, ['products:read'], ['app.uninstalled', 'product.created']);
    const staying = await subscribed(s, ['products:read'], ['app.uninstalled']);
    await uninstall(h.services, leaving.subscriber.installationId);
    await createProduct(s, 'After the uninstall');
    await drain();
    const [delivery, ...more] = receiver.receivedAt(leaving.path);
    expect(more).toEqual([]);
    const body = expectWellFormedDelivery(delivery!);
    expect(verifyDelivery(delivery!, leaving.secret, h.clock)).toEqual(body);
    expect(body).toMatchObject({ type: 'app.uninstalled', data: { installation_id: leaving.subscriber.installationId, app_id: leaving.subscriber.appId } });
    expect(receiver.receivedAt(staying.path)).toEqual([]);
    expect((await listSubscriptionsCall(h.app, s.storeId, leaving.subscriber.token)).status).toBe(401);
  });

  it('does not call an endpoint whose name resolves to a refused address, and logs why', async () => {
    const resolving = createServices({
      db: h.db,
      engine: engineOfHandle(h.db),
      clock: h.clock,
      rateLimits: { perInstallation: 1000, perClient: 1000 },
      webhooks: { environment: 'test', resolve: async () => ['169.254.169.254'], retryScheduleMs: SCHEDULE },
    });
    const s = await shop();
    const subscriber = await installSubscriber(h, s.store, ['products:read']);
    const { id } = await subscribe(h, s.storeId, subscriber, { endpoint_url: 'https://metadata.example.com/hook', event_types: ['product.created'] });
    await createProduct(s);
    const logged: string[] = [];
    const metadataDispatcher = createDispatcher(resolving, { random: () => 0.5, logWarning: (line) => logged.push(line) });
    await metadataDispatcher.runOnce();
    // The app is told the class; the operator's log, the name and its DNS answer.
    expect(await attemptsOf(id)).toEqual([
      expect.objectContaining({ outcome: 'failed', response_status: null, error: 'The endpoint resolves to a non-public address.' }),
    ]);
    expect(logged).toEqual([
      expect.stringContaining(`(subscription ${id}, store ${s.storeId}) got no answer: EREFUSEDADDRESS: metadata.example.com resolves to 169.254.169.254`),
    ]);
  });

  it('delivers, from the running loop, an event written by another process within a poll', async () => {
    const s = await shop();
    const catalog = await subscribed(s, ['products:read'], ['product.created']);
    await drain();
    const running = createDispatcher(services, { pollMs: 100, random: () => 0.5 });
    running.start();
    try {
      const other = await testDatabase.openAnother();
      const otherServices = createServices({
        db: other,
        engine: engineOfHandle(other),
        clock: h.clock,
        rateLimits: { perInstallation: 1000, perClient: 1000 },
      });
      await request(createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services: otherServices }))
        .post(`/stores/${s.storeId}/v1/products`)
        .set('Authorization', `Bearer ${s.writer}`)
        .set('Idempotency-Key', randomUUID())
        .send({ name: 'From elsewhere', product_kind: 'physical' })
        .expect(201);
      const deadline = Date.now() + 10_000;
      while (receiver.receivedAt(catalog.path).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(receiver.receivedAt(catalog.path)).toHaveLength(1);
    } finally {
      await running.stop();
    }
  });

  it('holds at most 4 attempts of one subscription on the wire, so a hanging endpoint does not hold up the others', async () => {
    const s = await shop();
    const slow = await subscribed(s, ['products:read'], ['product.created']);
    const elsewhere = await shop();
    const fast = await subscribed(elsewhere, ['products:read'], ['product.created']);
    receiver.answer(slow.path, 'hang');
    for (let index = 0; index < 10; index += 1) await createProduct(s, `Slow ${index}`);
    const running = createDispatcher(services, { pollMs: 50, concurrency: 8, random: () => 0.5 });
    running.start();
    try {
      await until(() => receiver.receivedAt(slow.path).length >= 4);
      for (let index = 0; index < 3; index += 1) await createProduct(elsewhere, `Fast ${index}`);
      await until(() => receiver.receivedAt(fast.path).length === 3);
      expect(receiver.receivedAt(slow.path)).toHaveLength(4);
    } finally {
      receiver.answer(slow.path, 200);
      await running.stop();
    }
  });

  it('holds a subscription at its limit of leases out of the claims until an answer, whatever its backlog; sends one at a time with a limit of one', async () => {
    const s = await shop();
    const busy = await subscribed(s, ['products:read'], ['product.created']);
    receiver.answer(busy.path, 'hang');
    for (let index = 0; index < 30; index += 1) await createProduct(s, `Queued ${index}`);
    const running = createDispatcher(services, { pollMs: 50, concurrency: 8, perSubscription: 1, random: () => 0.5 });
    running.start();
    try {
      await until(() => receiver.receivedAt(busy.path).length >= 1);
      // LEASES_AHEAD deliveries held by the worker (a claim shares its room among the queues due, so
      // it may take a claim or two), one of them on the wire; the queue is next looked at when the
      // leases end, not at every claim.
      const leasesOf = () =>
        h.db('webhook_deliveries').where({ subscription_id: busy.id }).whereNotNull('claimed_until').select<{ claimed_until: number }[]>('claimed_until');
      const deadline = Date.now() + 10_000;
      while ((await leasesOf()).length < LEASES_AHEAD && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const leases = await leasesOf();
      expect(leases).toHaveLength(LEASES_AHEAD);
      const queue = await h.db('webhook_queues').where({ subscription_id: busy.id }).first<{ next_due_at: number }>();
      expect(Number(queue?.next_due_at)).toBe(Math.max(...leases.map((lease) => Number(lease.claimed_until))));
      expect(receiver.receivedAt(busy.path)).toHaveLength(1);
      receiver.answer(busy.path, 200);
      await until(() => receiver.receivedAt(busy.path).length >= 30);
    } finally {
      receiver.answer(busy.path, 200);
      await running.stop();
    }
    expect(await h.db('webhook_deliveries').where({ subscription_id: busy.id, state: 'succeeded' })).toHaveLength(30);
  });

  it("keeps a subscription's attempts at once across two workers: its leases are one worker's at a time", async () => {
    const s = await shop();
    const busy = await subscribed(s, ['products:read'], ['product.created']);
    receiver.answer(busy.path, 'hang');
    for (let index = 0; index < 20; index += 1) await createProduct(s, `Shared ${index}`);
    const first = createDispatcher(services, { pollMs: 50, concurrency: 8, random: () => 0.5 });
    const second = createDispatcher(services, { pollMs: 50, concurrency: 8, random: () => 0.5 });
    first.start();
    second.start();
    try {
      await until(() => receiver.receivedAt(busy.path).length >= 4);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.receivedAt(busy.path)).toHaveLength(4);
      const holders = await h.db('webhook_deliveries').where({ subscription_id: busy.id }).whereNotNull('claim_token').distinct('claim_token');
      expect(holders).toHaveLength(1);
    } finally {
      receiver.answer(busy.path, 200);
      await Promise.all([first.stop(), second.stop()]);
    }
    // What the stopped workers held unsent is nobody's: the rest is sent, each event once.
    await drain();
    const ids = receiver.receivedAt(busy.path).map((delivery) => String(delivery.headers['webhook-id']));
    expect(new Set(ids).size).toBe(20);
    expect(ids).toHaveLength(20);
  });

  it('lets the deliveries it held unsent go when it stops, and another worker sends them at once', async () => {
    const s = await shop();
    const busy = await subscribed(s, ['products:read'], ['product.created']);
    receiver.answer(busy.path, 'hang');
    for (let index = 0; index < 12; index += 1) await createProduct(s, `Handed over ${index}`);
    const leaving = createDispatcher(services, { pollMs: 50, concurrency: 8, random: () => 0.5 });
    leaving.start();
    await until(() => receiver.receivedAt(busy.path).length >= 4);
    const stopping = leaving.stop();
    receiver.answer(busy.path, 200);
    await stopping;
    // The 4 on the wire were answered and recorded; the 8 held unsent are nobody's now.
    expect(await h.db('webhook_deliveries').where({ subscription_id: busy.id, state: 'succeeded' })).toHaveLength(4);
    const leased = await h.db('webhook_deliveries').where({ subscription_id: busy.id, state: 'pending' }).whereNotNull('claimed_until');
    expect(leased).toHaveLength(0);
    expect(await drain()).toBe(8);
    expect(await h.db('webhook_deliveries').where({ subscription_id: busy.id, state: 'succeeded' })).toHaveLength(12);
  });

  it('housekeeping finds a queue that pending deliveries wait in unseen (a path that never said so), and they are sent', async () => {
    const s = await shop();
    const forgotten = await subscribed(s, ['products:read'], ['product.created']);
    await createProduct(s, 'Waiting unseen');
    await h.db('webhook_queues').where({ subscription_id: forgotten.id }).update({ next_due_at: null });
    await fanOut(h.services);
    await h.db('webhook_queues').where({ subscription_id: forgotten.id }).update({ next_due_at: null });
    expect(await drain()).toBe(0);
    await runHousekeeping(h.services);
    expect(await drain()).toBe(1);
    expect(receiver.receivedAt(forgotten.path)).toHaveLength(1);
  });

  describe('webhooks.test', () => {
    it('sends webhook.test now, signed, whatever the event types, and answers the attempt; a repeated key answers it again without sending', async () => {
      const s = await shop();
      const catalog = await subscribed(s, ['products:read'], ['product.created']);
      const response = await postAction(h.app, s.storeId, catalog.subscriber.token, catalog.id, 'test', 'test-once');
      expect(response.status).toBe(200);
      const [delivery, ...more] = receiver.receivedAt(catalog.path);
      expect(more).toEqual([]);
      const body = expectWellFormedDelivery(delivery!);
      expect(verifyDelivery(delivery!, catalog.secret, h.clock)).toEqual(body);
      expect(body).toMatchObject({ type: 'webhook.test', store_id: s.storeId, data: { subscription_id: catalog.id } });
      expect(response.body.data).toEqual({
        id: expect.any(String),
        event_id: body.id,
        event_type: 'webhook.test',
        attempt: 1,
        outcome: 'succeeded',
        response_status: 200,
        latency_ms: 0,
        error: null,
        attempted_at: new Date(h.clock.now()).toISOString(),
      });
      const again = await postAction(h.app, s.storeId, catalog.subscriber.token, catalog.id, 'test', 'test-once');
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(response.body.data);
      expect(receiver.receivedAt(catalog.path)).toHaveLength(1);
    });

    it('holds no database while the receiver takes its time: the store API writes meanwhile, and a repeated key then answers the stored attempt', async () => {
      const s = await shop();
      const catalog = await subscribed(s, ['products:read'], ['product.created']);
      receiver.answer(catalog.path, 'hang');
      const testing = postAction(h.app, s.storeId, catalog.subscriber.token, catalog.id, 'test', 'slow-receiver').then((response) => response);
      await until(() => receiver.receivedAt(catalog.path).length === 1);
      // On SQLite one open transaction holds the only connection: this write would wait for the receiver.
      expect(await createProduct(s, 'Written while the test waits')).toMatchObject({ name: 'Written while the test waits' });
      receiver.answer(catalog.path, 200);
      const response = await testing;
      expect(response.status).toBe(200);
      expect(response.body.data).toMatchObject({ event_type: 'webhook.test', outcome: 'succeeded', response_status: 200 });
      const again = await postAction(h.app, s.storeId, catalog.subscriber.token, catalog.id, 'test', 'slow-receiver');
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(response.body.data);
      expect(receiver.receivedAt(catalog.path)).toHaveLength(1);
    });

    it('reports a failed test as a 200 with outcome failed, and never retries it; it is sent while paused too; a revoked subscription is 409', async () => {
      const s = await shop();
      const catalog = await subscribed(s, ['products:read'], ['product.created']);
      await patchSubscription(h.app, s.storeId, catalog.subscriber.token, catalog.id, { state: 'paused' });
      receiver.answer(catalog.path, 503);
      const response = await postAction(h.app, s.storeId, catalog.subscriber.token, catalog.id, 'test');
      expect(response.status).toBe(200);
      expect(response.body.data).toMatchObject({ outcome: 'failed', response_status: 503, error: 'The endpoint answered 503.' });
      h.clock.advance(SCHEDULE[0]! + SCHEDULE[1]!);
      await drain();
      expect(receiver.receivedAt(catalog.path)).toHaveLength(1);
      await request(h.app).delete(`/stores/${s.storeId}/v1/webhook-subscriptions/${catalog.id}`).set('Authorization', `Bearer ${catalog.subscriber.token}`);
      const revoked = await postAction(h.app, s.storeId, catalog.subscriber.token, catalog.id, 'test');
      expect({ status: revoked.status, code: revoked.body.error.code }).toEqual({ status: 409, code: 'SUBSCRIPTION_REVOKED' });
      expect(receiver.receivedAt(catalog.path)).toHaveLength(1);
    });
  });

  describe('webhooks.replay', () => {
    it('re-sends the stored events of [from, to) with their original ids and bodies, also those missed while paused; events_count counts them; from and to echoed to the second', async () => {
      const s = await shop();
      const catalog = await subscribed(s, ['products:read'], ['product.created', 'app.uninstalled']);
      const start = h.clock.now();
      await createProduct(s, 'Delivered');
      await drain();
      await patchSubscription(h.app, s.storeId, catalog.subscriber.token, catalog.id, { state: 'paused' });
      h.clock.advance(1000);
      await createProduct(s, 'Missed');
      h.clock.advance(1000);
      const end = h.clock.now();
      await createProduct(s, 'At the end: outside [from, to)');
      await drain();
      expect(receiver.receivedAt(catalog.path)).toHaveLength(1);
      await patchSubscription(h.app, s.storeId, catalog.subscriber.token, catalog.id, { state: 'active' });
      const from = new Date(start).toISOString();
      const to = new Date(end).toISOString().replace('.000Z', '+00:00');
      const replay = await postReplay(h.app, s.storeId, catalog.subscriber.token, catalog.id, { from, to });
      expect(replay.status).toBe(202);
      expect(replay.body.data).toEqual({
        id: expect.any(String),
        from: new Date(start).toISOString().replace('.000Z', 'Z'),
        to: new Date(end).toISOString().replace('.000Z', 'Z'),
        event_types: ['product.created', 'app.uninstalled'],
        events_count: 2,
        skipped_count: 0,
        requested_at: new Date(h.clock.now()).toISOString().replace('.000Z', 'Z'),
      });
      await drain();
      const stored = await h.db('outbox_events').where({ store_id: s.storeId, type: 'product.created' }).orderBy('occurred_at');
      const replayed = receiver.receivedAt(catalog.path).slice(1);
      expect(replayed.map((delivery) => delivery.body).sort()).toEqual(
        stored
          .slice(0, 2)
          .map((row: { payload: string }) => row.payload)
          .sort(),
      );
      expect(replayed.map((delivery) => delivery.headers['webhook-id']).sort()).toEqual(
        stored
          .slice(0, 2)
          .map((row: { id: string }) => row.id)
          .sort(),
      );
      for (const delivery of replayed) expect(verifyDelivery(delivery, catalog.secret, h.clock)).toEqual(expectWellFormedDelivery(delivery));
    });

    it('refuses a range over 7 days or older than 30 days (400), a type outside the subscription (422), a revoked subscription (409)', async () => {
      const s = await shop();
      const catalog = await subscribed(s, ['products:read', 'orders:read'], ['product.created']);
      const now = h.clock.now();
      const iso = (instant: number) => new Date(instant).toISOString();
      const tooLong = await postReplay(h.app, s.storeId, catalog.subscriber.token, catalog.id, { from: iso(now - 8 * DAY_MS), to: iso(now) });
      expect({ status: tooLong.status, code: tooLong.body.error.code, field: tooLong.body.error.details[0].field }).toEqual({
        status: 400,
        code: 'VALIDATION_FAILED',
        field: '/to',
      });
      const tooOld = await postReplay(h.app, s.storeId, catalog.subscriber.token, catalog.id, { from: iso(now - 31 * DAY_MS), to: iso(now - 30 * DAY_MS) });
      expect({ status: tooOld.status, field: tooOld.body.error.details[0].field }).toEqual({ status: 400, field: '/from' });
      const backwards = await postReplay(h.app, s.storeId, catalog.subscriber.token, catalog.id, { from: iso(now), to: iso(now) });
      expect(backwards.status).toBe(400);
      const outside = await postReplay(h.app, s.storeId, catalog.subscriber.token, catalog.id, {
        from: iso(now - DAY_MS),
        to: iso(now),
        event_types: ['order.created'],
      });
      expect({ status: outside.status, code: outside.body.error.code }).toEqual({ status: 422, code: 'EVENT_TYPE_NOT_ALLOWED' });
      await request(h.app).delete(`/stores/${s.storeId}/v1/webhook-subscriptions/${catalog.id}`).set('Authorization', `Bearer ${catalog.subscriber.token}`);
      const revoked = await postReplay(h.app, s.storeId, catalog.subscriber.token, catalog.id, { from: iso(now - DAY_MS), to: iso(now) });
      expect({ status: revoked.status, code: revoked.body.error.code }).toEqual({ status: 409, code: 'SUBSCRIPTION_REVOKED' });
    });
  });

  // Last: it moves the suite's clock 31 days on.
  it('housekeeping deletes dispatched events, finished deliveries and attempts after 30 days, and keeps an event not yet fanned out', async () => {
    const s = await shop();
    await subscribed(s, ['products:read'], ['product.created']);
    await createProduct(s, 'Old and delivered');
    await drain();
    await createProductAsStore(h.db, { storeId: s.storeId, installationId: null, now: h.clock.now() }, { name: 'Old, waiting', product_kind: 'physical' });
    h.clock.advance(31 * DAY_MS);
    await runHousekeeping(h.services);
    expect((await h.db('outbox_events').where({ store_id: s.storeId })).map((row: { dispatched_at: number | null }) => row.dispatched_at)).toEqual([null]);
    expect(await h.db('webhook_attempts').where('attempted_at', '<=', h.clock.now() - 30 * DAY_MS)).toEqual([]);
    expect(
      await h
        .db('webhook_deliveries')
        .whereNotNull('finished_at')
        .where('finished_at', '<=', h.clock.now() - 30 * DAY_MS),
    ).toEqual([]);
  });
});
