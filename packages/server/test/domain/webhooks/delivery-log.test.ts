import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { uuidV7 } from '../../../src/core/ids';
import { createProduct } from '../../../src/domain/catalog/products/changes';
import { createCustomer } from '../../../src/domain/storefront/customers/changes';
import { placeOrder } from '../../../src/domain/storefront/orders/changes';
import { fanOut } from '../../../src/domain/webhooks/delivery/fan-out';
import { runHousekeeping } from '../../../src/jobs/housekeeping';
import { createDispatcher, type Dispatcher } from '../../../src/jobs/webhook-dispatcher';
import { findInstallationOf } from '../../../src/platform/installations';
import { createServices, type Services } from '../../../src/services/container';
import { httpTransport } from '../../../src/services/webhook-transport';
import { expectError } from '../../support/auth-steps';
import { insertProduct } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import {
  type AppFixture,
  createTestApp,
  createTestStore,
  installWithTokens,
  localOnlyResolver,
  type StoreFixture,
  suiteHarness,
  UUID,
} from '../../support/harness';
import { expectWellFormedDelivery, type Receiver } from '../../support/webhook-receiver';
import { deleteSubscription, deliverySetup, installSubscriber, patchSubscription, postReplay, type Subscriber, subscribe } from '../../support/webhooks';

const DAY_MS = 24 * 60 * 60 * 1000;
const SCHEDULE = [1000, 2000];
/** Longer than any test here runs: a dispatcher that waited for its poll would not deliver in time. */
const NEVER_MS = 3_600_000;

interface StoredRow {
  id: string;
  type: string;
  payload: string;
  occurred_at: number | string;
}

describe.each(testDatabases())('the delivery log and recover on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let receiver: Receiver;
  let services: Services;
  let dispatcher: Dispatcher;

  beforeAll(async () => {
    ({ receiver, services, dispatcher } = await deliverySetup(h, SCHEDULE));
  });

  /** Runs the dispatcher until nothing is due. */
  async function drain(using: Dispatcher = dispatcher): Promise<void> {
    while ((await using.runOnce()) > 0);
  }

  /** Attempts each due delivery until the schedule is spent: every pending delivery ends failed (with a failing endpoint). */
  async function spendSchedule(): Promise<void> {
    await drain();
    for (const delay of SCHEDULE) {
      h.clock.advance(delay);
      await drain();
    }
  }

  interface Hooked {
    store: StoreFixture;
    storeId: string;
    subscriber: Subscriber;
    /** The subscriber's app, to install it again for a fresh token of the same installation. */
    client: AppFixture;
    scopes: string[];
    id: string;
    path: string;
  }

  /** A store whose installed app subscribes to these types at a receiver path of its own (or at `endpoint`). */
  async function hooked(eventTypes: string[] = ['product.created'], scopes = ['products:read', 'orders:read'], endpoint?: string): Promise<Hooked> {
    const store = await createTestStore(h);
    const client = await createTestApp(h, { required: scopes, optional: [] });
    const tokens = await installWithTokens(h, store, client, scopes);
    const installation = await findInstallationOf(h.db, store.store.id, client.app.id);
    const subscriber = { token: tokens.access_token, installationId: installation?.id as string, appId: client.app.id };
    const path = `/hooks/${randomUUID()}`;
    const { id } = await subscribe(h, store.store.id, subscriber, { endpoint_url: endpoint ?? receiver.url(path), event_types: eventTypes });
    return { store, storeId: store.store.id, subscriber, client, scopes, id, path };
  }

  /** A fresh token of the subscriber's own installation, as its app gets on its next consent (an access token lives 15 minutes). */
  const freshToken = async (s: Hooked): Promise<string> => (await installWithTokens(h, s.store, s.client, s.scopes)).access_token;

  const base = (s: Hooked) => `/stores/${s.storeId}/v1/webhook-subscriptions/${s.id}`;
  const logCall = (s: Hooked, query = '', token = s.subscriber.token) =>
    request(h.app)
      .get(`${base(s)}/deliveries${query === '' ? '' : `?${query}`}`)
      .set('Authorization', `Bearer ${token}`);
  const entryCall = (s: Hooked, eventId: string, token = s.subscriber.token) =>
    request(h.app)
      .get(`${base(s)}/deliveries/${eventId}`)
      .set('Authorization', `Bearer ${token}`);
  const recoverCall = (s: Hooked, body: object, key: string = randomUUID(), token = s.subscriber.token) =>
    request(h.app)
      .post(`${base(s)}/recover`)
      .set('Authorization', `Bearer ${token}`)
      .set('Idempotency-Key', key)
      .send(body);

  /** The store itself writes a product (product.created), a millisecond after the last event. */
  async function productCreated(s: Hooked, name: string): Promise<StoredRow> {
    h.clock.advance(1);
    const product = await createProduct(h.db, { storeId: s.storeId, installationId: null, now: h.clock.now() }, { name, product_kind: 'physical' });
    return h
      .db('outbox_events')
      .where({ store_id: s.storeId, type: 'product.created' })
      .whereRaw('payload like ?', [`%"id":${product.id},%`])
      .first();
  }

  async function orderCreated(s: Hooked): Promise<StoredRow> {
    h.clock.advance(1);
    const shopper = { storeId: s.storeId, installationId: null, now: h.clock.now() };
    const productId = await insertProduct(h.db, s.storeId, { status: 'active', price_state: 'ready', price_halalas: 5_000, quantity: 5 });
    const customer = await createCustomer(h.db, shopper, { name: 'Noura Al-Harbi' });
    await placeOrder(h.db, shopper, { customerId: customer.id, items: [{ productId, quantity: 1 }] });
    return h.db('outbox_events').where({ store_id: s.storeId, type: 'order.created' }).orderBy('occurred_at', 'desc').first();
  }

  const iso = (instant: number | string) => new Date(Number(instant)).toISOString();
  const eventIdsOf = (response: request.Response): string[] => (response.body.data as { event_id: string }[]).map((entry) => entry.event_id);

  describe('webhooks.deliveries.list and webhooks.deliveries.get', () => {
    it('logs each event with its real attempts (a 500, then a 200), the next attempt while one is due, newest event first', async () => {
      const s = await hooked();
      receiver.answer(s.path, 500);
      const first = await productCreated(s, 'Retried');
      await drain();
      const retryAt = h.clock.now() + SCHEDULE[0]!;
      const pending = await entryCall(s, first.id);
      expect(pending.status).toBe(200);
      expect(pending.body.data).toMatchObject({ state: 'pending', next_attempt_at: iso(retryAt), finished_at: null, attempts_count: 1 });
      h.clock.advance(SCHEDULE[0]!);
      receiver.answer(s.path, 200);
      await drain();
      const second = await productCreated(s, 'At once');
      await drain();
      const log = await logCall(s);
      expect(log.status).toBe(200);
      expect(eventIdsOf(log)).toEqual([second.id, first.id]);
      const entry = log.body.data[1];
      expect(entry).toEqual({
        event_id: first.id,
        event_type: 'product.created',
        occurred_at: iso(first.occurred_at),
        state: 'succeeded',
        source: 'event',
        queued_count: 1,
        attempts_count: 2,
        queued_at: iso(first.occurred_at),
        next_attempt_at: null,
        finished_at: iso(retryAt),
        attempts: [
          {
            id: expect.stringMatching(UUID),
            source: 'event',
            attempt: 1,
            attempted_at: iso(first.occurred_at),
            outcome: 'failed',
            response_status: 500,
            error_class: null,
            error: 'The endpoint answered 500.',
            latency_ms: 0,
          },
          {
            id: expect.stringMatching(UUID),
            source: 'event',
            attempt: 2,
            attempted_at: iso(retryAt),
            outcome: 'succeeded',
            response_status: 200,
            error_class: null,
            error: null,
            latency_ms: 0,
          },
        ],
      });
      expect((await entryCall(s, first.id)).body.data).toEqual(entry);
      expect(log.body.meta).toEqual({ request_id: expect.any(String), has_more: false, limit: 25, next_cursor: null, consistency: 'live_keyset' });
      // The attempts are the ones the endpoint got, under the event's id.
      expect(receiver.receivedAt(s.path).map((delivery) => delivery.headers['webhook-id'])).toEqual([first.id, first.id, second.id]);
    });

    it('names why an attempt got no status: a refused connection, a name without an address, a timeout', async () => {
      const refused = await hooked(['product.created'], ['products:read'], 'http://127.0.0.1:9/hooks/closed');
      const unresolved = await hooked(['product.created'], ['products:read'], 'https://nowhere.example.com/hooks');
      const slow = await hooked();
      receiver.answer(slow.path, 'hang');
      const refusedEvent = await productCreated(refused, 'Refused');
      const unresolvedEvent = await productCreated(unresolved, 'Unresolved');
      const slowEvent = await productCreated(slow, 'Slow');
      const impatient = createDispatcher(
        createServices({
          db: h.db,
          clock: h.clock,
          rateLimits: { perInstallation: 1000, perClient: 1000 },
          webhooks: {
            environment: 'test',
            retryScheduleMs: SCHEDULE,
            transport: httpTransport({ policy: { allowLoopback: true }, resolve: localOnlyResolver, clock: h.clock, timeoutMs: 200 }),
          },
        }),
        { random: () => 0.5 },
      );
      try {
        await drain(impatient);
      } finally {
        receiver.answer(slow.path, 200);
      }
      const attemptOf = async (s: Hooked, eventId: string) => (await entryCall(s, eventId)).body.data.attempts[0];
      expect(await attemptOf(refused, refusedEvent.id)).toMatchObject({ outcome: 'failed', response_status: null, error_class: 'connection_refused' });
      expect(await attemptOf(unresolved, unresolvedEvent.id)).toMatchObject({ outcome: 'failed', response_status: null, error_class: 'dns' });
      expect(await attemptOf(slow, slowEvent.id)).toMatchObject({
        outcome: 'failed',
        response_status: null,
        error_class: 'timeout',
        error: 'The endpoint did not answer within 200 ms.',
      });
    });

    it("gathers a replay into the event's entry: queued twice, its state and source the latest, each attempt with its source", async () => {
      const s = await hooked();
      const event = await productCreated(s, 'Replayed');
      await drain();
      h.clock.advance(1000);
      const replay = await postReplay(h.app, s.storeId, s.subscriber.token, s.id, { from: iso(event.occurred_at), to: iso(h.clock.now()) });
      expect(replay.body.data.events_count).toBe(1);
      expect((await entryCall(s, event.id)).body.data).toMatchObject({
        state: 'pending',
        source: 'replay',
        queued_count: 2,
        attempts_count: 1,
        queued_at: iso(h.clock.now()),
        next_attempt_at: iso(h.clock.now()),
        finished_at: null,
      });
      await drain();
      const entry = (await entryCall(s, event.id)).body.data;
      expect(entry).toMatchObject({ state: 'succeeded', source: 'replay', queued_count: 2, attempts_count: 2, finished_at: iso(h.clock.now()) });
      expect(entry.attempts.map((attempt: { source: string; attempt: number }) => [attempt.source, attempt.attempt])).toEqual([
        ['event', 1],
        ['replay', 1],
      ]);
      expect((await logCall(s)).body.data).toEqual([entry]);
    });

    it('filters by state and event type, pages newest event first, and keeps the subscription and the filters in the cursor', async () => {
      const s = await hooked(['product.created', 'order.created']);
      const delivered = await productCreated(s, 'Delivered');
      const ordered = await orderCreated(s);
      await drain();
      receiver.answer(s.path, 500);
      const failed = await productCreated(s, 'Failed');
      await spendSchedule(); // the subscription is paused
      receiver.answer(s.path, 200);
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'active' });
      const queued = await productCreated(s, 'Queued');
      await fanOut(services);
      const byState = async (state: string) => eventIdsOf(await logCall(s, `state=${state}`));
      expect(await byState('succeeded')).toEqual([ordered.id, delivered.id]);
      expect(await byState('failed')).toEqual([failed.id]);
      expect(await byState('pending')).toEqual([queued.id]);
      expect(await byState('cancelled')).toEqual([]);
      expect(eventIdsOf(await logCall(s, 'event_type=order.created'))).toEqual([ordered.id]);
      expect(eventIdsOf(await logCall(s, 'event_type=product.created&state=succeeded'))).toEqual([delivered.id]);
      expectError(await logCall(s, 'state=lost'), 400, 'INVALID_FILTER');
      expectError(await logCall(s, 'event_type=order.shipped'), 400, 'INVALID_FILTER');
      expectError(await logCall(s, 'colour=red'), 422, 'UNKNOWN_FIELD');

      const walked: string[] = [];
      let cursor: string | null = null;
      do {
        const page: request.Response = await logCall(s, `limit=1${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
        expect(page.status).toBe(200);
        walked.push(...eventIdsOf(page));
        cursor = page.body.meta.next_cursor;
      } while (cursor !== null);
      expect(walked).toEqual([queued.id, failed.id, ordered.id, delivered.id]);

      const first = await logCall(s, 'limit=1&state=succeeded');
      const next = encodeURIComponent(first.body.meta.next_cursor as string);
      expect(eventIdsOf(await logCall(s, `limit=1&state=succeeded&cursor=${next}`))).toEqual([delivered.id]);
      expectError(await logCall(s, `limit=1&cursor=${next}`), 400, 'INVALID_CURSOR');
      // Another subscription's log (of the same installation) refuses the cursor, even with the same filters.
      const sameStore = {
        ...s,
        id: (await subscribe(h, s.storeId, s.subscriber, { endpoint_url: receiver.url(s.path), event_types: ['product.created'] })).id,
      };
      expectError(await logCall(sameStore, `limit=1&state=succeeded&cursor=${next}`), 400, 'INVALID_CURSOR');
    });

    it("answers another installation's subscription, an event never delivered to it and another store's token as the other operations do", async () => {
      const s = await hooked();
      const event = await productCreated(s, 'Delivered');
      await drain();
      const stranger = await installSubscriber(h, s.store, ['products:read']);
      expectError(await logCall(s, '', stranger.token), 404, 'NOT_FOUND');
      expectError(await entryCall(s, event.id, stranger.token), 404, 'NOT_FOUND');
      expectError(await recoverCall(s, { since: iso(h.clock.now() - 1000) }, randomUUID(), stranger.token), 404, 'NOT_FOUND');
      const elsewhere = await hooked();
      expectError(await logCall(s, '', elsewhere.subscriber.token), 404, 'STORE_NOT_FOUND');
      expectError(await entryCall(s, event.id, elsewhere.subscriber.token), 404, 'STORE_NOT_FOUND');
      expectError(await entryCall(s, randomUUID()), 404, 'NOT_FOUND');
      expectError(await entryCall(s, uuidV7(h.clock.now())), 404, 'NOT_FOUND');
      expectError(await entryCall({ ...s, id: randomUUID() }, event.id), 404, 'NOT_FOUND');
      expectError(await entryCall(s, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
      expectError(await request(h.app).get(`${base(s)}/deliveries`), 401, 'UNAUTHENTICATED');
      // A revoked subscription's log is still read.
      await deleteSubscription(h.app, s.storeId, s.subscriber.token, s.id);
      expect(eventIdsOf(await logCall(s))).toEqual([event.id]);
    });
  });

  describe('webhooks.recover', () => {
    it('queues again exactly the entries given up since `since`, with their ids and bodies, also while paused; not those delivered or pending again since', async () => {
      const s = await hooked();
      receiver.answer(s.path, 500);
      const before = await productCreated(s, 'Given up before since');
      await spendSchedule();
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'active' });
      h.clock.advance(1000);
      const since = h.clock.now();
      const lost = await productCreated(s, 'Given up');
      const redelivered = await productCreated(s, 'Given up, then replayed and delivered');
      const requeued = await productCreated(s, 'Given up, then replayed, still pending');
      await spendSchedule();
      receiver.answer(s.path, 200);
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'active' });
      const fine = await productCreated(s, 'Delivered');
      await drain();
      const replayOf = (event: StoredRow) =>
        postReplay(h.app, s.storeId, s.subscriber.token, s.id, { from: iso(event.occurred_at), to: iso(Number(event.occurred_at) + 1) });
      expect((await replayOf(redelivered)).body.data.events_count).toBe(1);
      await drain();
      expect((await replayOf(requeued)).body.data.events_count).toBe(1);
      expect(eventIdsOf(await logCall(s, 'state=failed'))).toEqual([lost.id, before.id]);
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'paused' });
      const received = receiver.receivedAt(s.path).length;

      const recovered = await recoverCall(s, { since: iso(since) });
      expect(recovered.status).toBe(202);
      expect(recovered.body.data).toEqual({
        id: expect.stringMatching(UUID),
        since: iso(since).replace('.000Z', 'Z'),
        events_count: 1,
        requested_at: iso(h.clock.now()).replace('.000Z', 'Z'),
      });
      expect((await entryCall(s, lost.id)).body.data).toMatchObject({
        state: 'pending',
        source: 'recover',
        queued_count: 2,
        next_attempt_at: iso(h.clock.now()),
      });
      await drain(); // paused: the recover and the replay are sent, nothing of kind event
      const sent = receiver.receivedAt(s.path).slice(received);
      expect(sent.map((delivery) => delivery.headers['webhook-id']).sort()).toEqual([lost.id, requeued.id].sort());
      const resent = sent.find((delivery) => delivery.headers['webhook-id'] === lost.id);
      expect(resent!.body).toBe(lost.payload);
      expect(expectWellFormedDelivery(resent!)).toMatchObject({ id: lost.id, type: 'product.created' });
      const entry = (await entryCall(s, lost.id)).body.data;
      expect(entry).toMatchObject({ state: 'succeeded', source: 'recover', queued_count: 2, attempts_count: SCHEDULE.length + 2 });
      expect(entry.attempts.at(-1)).toMatchObject({ source: 'recover', attempt: 1, outcome: 'succeeded', response_status: 200 });
      expect((await entryCall(s, fine.id)).body.data).toMatchObject({ state: 'succeeded', queued_count: 1 });

      // From further back, only what is still failed: the one given up before.
      const again = await recoverCall(s, { since: iso(Number(before.occurred_at)) });
      expect(again.body.data.events_count).toBe(1);
      expect((await entryCall(s, before.id)).body.data).toMatchObject({ state: 'pending', source: 'recover' });
      expect((await recoverCall(s, { since: iso(Number(before.occurred_at)) })).body.data.events_count).toBe(0);
    });

    it("leaves out the types the token's scopes no longer allow", async () => {
      const store = await createTestStore(h);
      const client = await createTestApp(h, { required: ['products:read'], optional: ['orders:read'] });
      const tokens = await installWithTokens(h, store, client, ['products:read', 'orders:read']);
      const installation = await findInstallationOf(h.db, store.store.id, client.app.id);
      const subscriber = { token: tokens.access_token, installationId: installation?.id as string, appId: client.app.id };
      const path = `/hooks/${randomUUID()}`;
      const { id } = await subscribe(h, store.store.id, subscriber, { endpoint_url: receiver.url(path), event_types: ['product.created', 'order.created'] });
      const s: Hooked = { store, storeId: store.store.id, subscriber, client, scopes: ['products:read'], id, path };
      receiver.answer(path, 500);
      const since = h.clock.now();
      const product = await productCreated(s, 'Given up');
      const order = await orderCreated(s);
      await spendSchedule();
      expect(eventIdsOf(await logCall(s, 'state=failed'))).toEqual([order.id, product.id]);
      // The app's next consent leaves orders:read out: the installation no longer holds it.
      const narrowed = await freshToken(s);
      const recovered = await recoverCall(s, { since: iso(since) }, randomUUID(), narrowed);
      expect(recovered.body.data.events_count).toBe(1);
      expect((await entryCall(s, product.id, narrowed)).body.data).toMatchObject({ state: 'pending', source: 'recover' });
      expect((await entryCall(s, order.id, narrowed)).body.data).toMatchObject({ state: 'failed', source: 'event' });
    });

    it('takes `since` within the last 30 days and not in the future (400 VALIDATION_FAILED naming /since); a revoked subscription is 409', async () => {
      const s = await hooked();
      const now = h.clock.now();
      const future = await recoverCall(s, { since: iso(now + 1000) });
      expectError(future, 400, 'VALIDATION_FAILED');
      expect(future.body.error.details).toEqual([{ location: 'body', field: '/since', message: 'must not be in the future' }]);
      const old = await recoverCall(s, { since: iso(now - 30 * DAY_MS - 1) });
      expectError(old, 400, 'VALIDATION_FAILED');
      expect(old.body.error.details).toEqual([{ location: 'body', field: '/since', message: 'must be within the last 30 days, for which events are kept' }]);
      expect((await recoverCall(s, { since: iso(now - 30 * DAY_MS) })).status).toBe(202);
      expect((await recoverCall(s, { since: iso(now) })).status).toBe(202);
      expectError(await recoverCall(s, { since: 'yesterday' }), 400, 'VALIDATION_FAILED');
      expectError(await recoverCall(s, {}), 400, 'VALIDATION_FAILED');
      expectError(await recoverCall(s, { since: iso(now), event_types: ['product.created'] }), 422, 'UNKNOWN_FIELD');
      await deleteSubscription(h.app, s.storeId, s.subscriber.token, s.id);
      expectError(await recoverCall(s, { since: iso(now) }), 409, 'SUBSCRIPTION_REVOKED');
    });

    it('under one Idempotency-Key queues once and answers the first recover again; another body is IDEMPOTENCY_KEY_REUSED; no key, IDEMPOTENCY_KEY_REQUIRED', async () => {
      const s = await hooked();
      receiver.answer(s.path, 500);
      const since = h.clock.now();
      const lost = await productCreated(s, 'Given up');
      await spendSchedule();
      const body = { since: iso(since) };
      const first = await recoverCall(s, body, 'recover-once');
      expect(first.body.data.events_count).toBe(1);
      const again = await recoverCall(s, body, 'recover-once');
      expect(again.status).toBe(202);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      expect(await h.db('webhook_deliveries').where({ subscription_id: s.id, event_id: lost.id, kind: 'recover' })).toHaveLength(1);
      expectError(await recoverCall(s, { since: iso(since + 1) }, 'recover-once'), 422, 'IDEMPOTENCY_KEY_REUSED');
      const withoutKey = await request(h.app)
        .post(`${base(s)}/recover`)
        .set('Authorization', `Bearer ${s.subscriber.token}`)
        .send(body);
      expectError(withoutKey, 400, 'IDEMPOTENCY_KEY_REQUIRED');
    });

    it('wakes an idle dispatcher: what it queues is sent at once, not at the next poll', async () => {
      const s = await hooked();
      receiver.answer(s.path, 500);
      const since = h.clock.now();
      const lost = await productCreated(s, 'Given up');
      await spendSchedule();
      receiver.answer(s.path, 200);
      const idle = createDispatcher(services, { pollMs: NEVER_MS, random: () => 0.5 });
      idle.start();
      try {
        const received = receiver.receivedAt(s.path).length;
        expect((await recoverCall(s, { since: iso(since) })).body.data.events_count).toBe(1);
        const deadline = Date.now() + 20_000;
        while (receiver.receivedAt(s.path).length === received && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
        expect(
          receiver
            .receivedAt(s.path)
            .slice(received)
            .map((delivery) => delivery.headers['webhook-id']),
        ).toEqual([lost.id]);
      } finally {
        await idle.stop();
      }
    });
  });

  // Last: it moves the suite's clock 30 days on.
  it('keeps an entry as long as its event: 30 days after it occurred it is not listed, is EVENT_EXPIRED, and housekeeping deletes its deliveries and attempts', async () => {
    const s = await hooked();
    receiver.answer(s.path, 500);
    const old = await productCreated(s, 'Old');
    await drain();
    h.clock.advance(SCHEDULE[0]!);
    receiver.answer(s.path, 200);
    await drain();
    h.clock.advance(30 * DAY_MS - SCHEDULE[0]! - 2);
    const recent = await productCreated(s, 'Recent');
    await drain();
    // The subscriber's token expired long ago: the same app's next one.
    const token = await freshToken(s);
    expect(eventIdsOf(await logCall(s, '', token))).toEqual([recent.id, old.id]);
    h.clock.advance(1);
    expect(eventIdsOf(await logCall(s, '', token))).toEqual([recent.id]);
    expectError(await entryCall(s, old.id, token), 404, 'EVENT_EXPIRED');
    expect((await entryCall(s, recent.id, token)).status).toBe(200);
    const oldDeliveries = await h.db('webhook_deliveries').where({ event_id: old.id });
    expect(oldDeliveries).toHaveLength(1);
    expect(await h.db('webhook_attempts').where({ event_id: old.id })).toHaveLength(2);
    await runHousekeeping(h.services);
    expect(await h.db('webhook_deliveries').where({ event_id: old.id })).toEqual([]);
    // Its second attempt was made after the event: it goes with the event all the same.
    expect(await h.db('webhook_attempts').where({ event_id: old.id })).toEqual([]);
    expect(await h.db('webhook_deliveries').where({ event_id: recent.id })).toHaveLength(1);
    expect(await h.db('webhook_attempts').where({ event_id: recent.id })).toHaveLength(1);
    expectError(await entryCall(s, old.id, token), 404, 'EVENT_EXPIRED');
  });
});
