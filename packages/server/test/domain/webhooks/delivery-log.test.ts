import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { uuidV7 } from '../../../src/core/ids';
import { engineOfHandle } from '../../../src/db/engine';
import { createDispatcher, type Dispatcher } from '../../../src/delivery/dispatcher';
import { fanOut } from '../../../src/delivery/fan-out';
import { createProduct } from '../../../src/domain/catalog/products/changes';
import { createCustomer } from '../../../src/domain/storefront/customers/changes';
import { placeOrder } from '../../../src/domain/storefront/orders/changes';
import { ATTEMPTS_SHOWN } from '../../../src/domain/webhooks/log/queries';
import { runHousekeeping } from '../../../src/jobs/housekeeping';
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
import { walkList } from '../../support/list-walk';
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

  /** A product created while its endpoint answers 500, delivered by the first retry. */
  async function deliveredAtTheSecondAttempt(s: Hooked, name: string): Promise<StoredRow> {
    receiver.answer(s.path, 500);
    const event = await productCreated(s, name);
    await drain();
    h.clock.advance(SCHEDULE[0]!);
    receiver.answer(s.path, 200);
    await drain();
    return event;
  }

  /** A product delivered, then one whose endpoint answers 500: its retry is due after the schedule's first delay. */
  async function deliveredAndRetrying(s: Hooked): Promise<{ delivered: StoredRow; retrying: StoredRow }> {
    const delivered = await productCreated(s, 'Delivered');
    await drain();
    receiver.answer(s.path, 500);
    const retrying = await productCreated(s, 'Retrying');
    await drain();
    return { delivered, retrying };
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
        paused: false,
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

    it("names why an attempt got no status by its class, never an address or a DNS answer, which go to the operator's log", async () => {
      const refused = await hooked(['product.created'], ['products:read'], 'http://127.0.0.1:9/hooks/closed');
      const unresolved = await hooked(['product.created'], ['products:read'], 'https://nowhere.example.com/hooks');
      const internal = await hooked(['product.created'], ['products:read'], 'https://billing.internal.example.com/hooks');
      const slow = await hooked();
      receiver.answer(slow.path, 'hang');
      const refusedEvent = await productCreated(refused, 'Refused');
      const unresolvedEvent = await productCreated(unresolved, 'Unresolved');
      const internalEvent = await productCreated(internal, 'Internal');
      const slowEvent = await productCreated(slow, 'Slow');
      // A name the service's own DNS resolves to an address of its private network (split-horizon DNS).
      const resolve = async (name: string) => (name === 'billing.internal.example.com' ? ['10.20.30.40'] : localOnlyResolver(name));
      const operatorLog: string[] = [];
      // Long enough that a refusal is seen before the deadline on a loaded machine (an event loop
      // held past the deadline runs the timer before the socket's error), short enough for a test.
      const impatient = createDispatcher(
        createServices({
          db: h.db,
          engine: engineOfHandle(h.db),
          clock: h.clock,
          rateLimits: { perInstallation: 1000, perClient: 1000 },
          webhooks: {
            environment: 'test',
            retryScheduleMs: SCHEDULE,
            transport: httpTransport({ policy: { allowLoopback: true }, resolve, clock: h.clock, timeoutMs: 2000 }),
          },
        }),
        { random: () => 0.5, logWarning: (line) => operatorLog.push(line) },
      );
      try {
        await drain(impatient);
      } finally {
        receiver.answer(slow.path, 200);
      }
      const attemptOf = async (s: Hooked, eventId: string) => (await entryCall(s, eventId)).body.data.attempts[0];
      expect(await attemptOf(refused, refusedEvent.id)).toMatchObject({
        outcome: 'failed',
        response_status: null,
        error_class: 'connection_refused',
        error: 'The endpoint refused the connection (ECONNREFUSED).',
      });
      expect(await attemptOf(unresolved, unresolvedEvent.id)).toMatchObject({
        outcome: 'failed',
        response_status: null,
        error_class: 'dns',
        error: "The endpoint's host name has no address (ENOTFOUND).",
      });
      expect(await attemptOf(internal, internalEvent.id)).toMatchObject({
        outcome: 'failed',
        response_status: null,
        error_class: 'address_refused',
        error: 'The endpoint resolves to a non-public address.',
      });
      // The app's view of it holds no address; the operator's log holds each, with the delivery it was.
      const seenByApps = JSON.stringify([await logCall(refused), await logCall(internal), await logCall(unresolved)].map((response) => response.body));
      expect(seenByApps).not.toMatch(/10\.20\.30\.40|127\.0\.0\.1|resolves to 10/);
      expect(operatorLog).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            new RegExp(
              `delivery \\d+ \\(subscription ${internal.id}, store ${internal.storeId}\\) got no answer: .*billing\\.internal\\.example\\.com resolves to 10\\.20\\.30\\.40`,
            ),
          ),
          expect.stringMatching(new RegExp(`subscription ${refused.id}, .*ECONNREFUSED 127\\.0\\.0\\.1:9`)),
        ]),
      );
      expect(await attemptOf(slow, slowEvent.id)).toMatchObject({
        outcome: 'failed',
        response_status: null,
        error_class: 'timeout',
        error: 'The endpoint did not answer within 2 seconds.',
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

      const walked = await walkList<{ event_id: string }>((cursor) => logCall(s, `limit=1${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`));
      expect(walked.items.map((entry) => entry.event_id)).toEqual([queued.id, failed.id, ordered.id, delivered.id]);

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
        // The replay of `requeued` is pending but was never attempted: nothing is being retried.
        retrying_count: 0,
        next_retry_at: null,
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

    it("leaves out the types the token's scopes no longer allow, and so does the log", async () => {
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
      // The log follows the grant too: the order's entry is neither listed nor read, and comes back with the scope.
      expect(eventIdsOf(await logCall(s, '', narrowed))).toEqual([product.id]);
      expect(eventIdsOf(await logCall(s, 'event_type=order.created', narrowed))).toEqual([]);
      expectError(await entryCall(s, order.id, narrowed), 404, 'NOT_FOUND');
      const widened = await installWithTokens(h, store, client, ['products:read', 'orders:read']);
      expect((await entryCall(s, order.id, widened.access_token)).body.data).toMatchObject({ state: 'failed', source: 'event' });
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

    it('says what it left to the retries: the events still being retried and when the next retry is due (none while paused)', async () => {
      const s = await hooked();
      receiver.answer(s.path, 500);
      const since = h.clock.now();
      const retried = [await productCreated(s, 'Retried one'), await productCreated(s, 'Retried two')];
      await drain();
      const firstRetryAt = h.clock.now() + SCHEDULE[0]!;
      const early = await recoverCall(s, { since: iso(since) });
      expect(early.status).toBe(202);
      expect(early.body.data).toMatchObject({ events_count: 0, retrying_count: 2, next_retry_at: iso(firstRetryAt) });
      expect(eventIdsOf(await logCall(s, 'state=pending')).sort()).toEqual(retried.map((event) => event.id).sort());
      // Paused, the retries of events wait for the resume: no time is due.
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'paused' });
      expect((await recoverCall(s, { since: iso(since) })).body.data).toMatchObject({ events_count: 0, retrying_count: 2, next_retry_at: null });
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'active' });
      await spendSchedule();
      const late = await recoverCall(s, { since: iso(since) });
      expect(late.body.data).toMatchObject({ events_count: 2, retrying_count: 0, next_retry_at: null });
    });
  });

  describe('webhooks.replay, bounded', () => {
    /** The seven days up to now, as far back as one replay reaches. */
    const lastWeek = () => ({ from: iso(h.clock.now() - 7 * DAY_MS + 1), to: iso(h.clock.now() + 1) });
    const replayCall = (s: Hooked, body: object) => postReplay(h.app, s.storeId, s.subscriber.token, s.id, body);
    /** Each event's replays to the subscription, by event id. */
    async function replaysPerEvent(s: Hooked): Promise<Map<string, number>> {
      const rows: { event_id: string; n: number | string }[] = await h
        .db('webhook_deliveries')
        .where({ store_id: s.storeId, subscription_id: s.id, kind: 'replay' })
        .groupBy('event_id')
        .select('event_id', h.db.raw('count(*) as n'));
      return new Map(rows.map((row) => [row.event_id, Number(row.n)]));
    }

    it('queues each event of a 7-day window at most once over 50 replays, one after another and all at once', async () => {
      const s = await hooked();
      const events: StoredRow[] = [];
      for (let index = 0; index < 4; index += 1) events.push(await productCreated(s, `Replayed ${index}`));
      await drain();
      const ids = events.map((event) => event.id).sort();

      const oneByOne: request.Response[] = [];
      for (let call = 0; call < 50; call += 1) oneByOne.push(await replayCall(s, lastWeek()));
      expect(oneByOne.map((response) => response.status)).toEqual(Array.from({ length: 50 }, () => 202));
      expect(oneByOne[0]?.body.data).toMatchObject({ events_count: 4, skipped_count: 0 });
      for (const later of oneByOne.slice(1)) expect(later.body.data).toMatchObject({ events_count: 0, skipped_count: 4 });
      expect([...(await replaysPerEvent(s)).entries()].sort()).toEqual(ids.map((id) => [id, 1]));

      await drain(); // delivered: nothing pending, so the next replay queues them again, once
      const atOnce = await Promise.all(Array.from({ length: 50 }, () => replayCall(s, lastWeek())));
      expect(atOnce.map((response) => response.status)).toEqual(Array.from({ length: 50 }, () => 202));
      const counts = atOnce.map((response) => [response.body.data.events_count, response.body.data.skipped_count]);
      expect(counts.filter(([queued]) => queued === 4)).toHaveLength(1);
      expect(counts.filter(([queued, skipped]) => queued === 0 && skipped === 4)).toHaveLength(49);
      expect([...(await replaysPerEvent(s)).entries()].sort()).toEqual(ids.map((id) => [id, 2]));
      for (const id of ids) expect((await entryCall(s, id)).body.data).toMatchObject({ state: 'pending', source: 'replay', queued_count: 3 });
    });

    it('skips an event whose delivery is still retrying, or waiting for the paused subscription; queues the rest', async () => {
      const s = await hooked();
      const { delivered, retrying } = await deliveredAndRetrying(s);
      const replay = await replayCall(s, lastWeek());
      expect(replay.body.data).toMatchObject({ events_count: 1, skipped_count: 1 });
      expect((await replaysPerEvent(s)).get(retrying.id)).toBeUndefined();
      expect((await replaysPerEvent(s)).get(delivered.id)).toBe(1);
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'paused' });
      // Paused: the retrying event waits for the resume and is skipped; the replay just queued is pending too.
      expect((await replayCall(s, lastWeek())).body.data).toMatchObject({ events_count: 0, skipped_count: 2 });
    });
  });

  describe('the log, bounded', () => {
    /** What the log's statements on the webhook tables return, in rows, while `work` runs: what the service reads. */
    async function rowsReadBy(work: () => Promise<unknown>): Promise<number> {
      let rows = 0;
      const count = (response: unknown, query: { sql?: string }) => {
        if (!/webhook_(deliveries|attempts)/.test(query.sql ?? '')) return;
        const read = Array.isArray(response) ? response : (response as { rows?: unknown[] } | undefined)?.rows;
        rows += read?.length ?? 0;
      };
      h.db.on('query-response', count);
      try {
        await work();
      } finally {
        h.db.off('query-response', count);
      }
      return rows;
    }

    it('reads as many rows after 50 replays of the week as after one', async () => {
      const s = await hooked();
      for (let index = 0; index < 5; index += 1) await productCreated(s, `Listed ${index}`);
      await drain();
      const page = async () => {
        const response = await logCall(s, 'limit=25');
        expect(response.status).toBe(200);
        return response.body.data as { queued_count: number }[];
      };
      const lastWeek = { from: iso(h.clock.now() - 7 * DAY_MS + 1), to: iso(h.clock.now() + 1) };
      await postReplay(h.app, s.storeId, s.subscriber.token, s.id, lastWeek);
      const once = await rowsReadBy(page);
      expect(once).toBeGreaterThan(0);
      for (let call = 1; call < 50; call += 1) await postReplay(h.app, s.storeId, s.subscriber.token, s.id, lastWeek);
      expect(await rowsReadBy(page)).toBe(once);
      expect((await page()).map((entry) => entry.queued_count)).toEqual([2, 2, 2, 2, 2]);
      // Delivered, then replayed 50 times again: one more delivery each, the same rows as one replay more.
      await drain();
      await postReplay(h.app, s.storeId, s.subscriber.token, s.id, lastWeek);
      const twice = await rowsReadBy(page);
      for (let call = 1; call < 50; call += 1) await postReplay(h.app, s.storeId, s.subscriber.token, s.id, lastWeek);
      expect(await rowsReadBy(page)).toBe(twice);
      expect((await page()).map((entry) => entry.queued_count)).toEqual([3, 3, 3, 3, 3]);
    });

    it("bounds an event's deliveries and attempts in SQL however many there are: the 50 latest attempts in their order, the rest counted", async () => {
      const s = await hooked();
      const event = await productCreated(s, 'Replayed for months');
      await drain();
      // 300 more deliveries of it, three attempts each: what replays spread over time leave.
      const now = h.clock.now();
      const deliveries = Array.from({ length: 300 }, (_, index) => ({
        store_id: s.storeId,
        subscription_id: s.id,
        event_id: event.id,
        event_type: 'product.created',
        event_occurred_at: Number(event.occurred_at),
        kind: index % 2 === 0 ? 'replay' : 'recover',
        state: 'failed',
        attempts: 3,
        next_attempt_at: now,
        created_at: now,
        finished_at: now,
      }));
      for (let start = 0; start < deliveries.length; start += 100) await h.db('webhook_deliveries').insert(deliveries.slice(start, start + 100));
      const ids: { id: number | string }[] = await h
        .db('webhook_deliveries')
        .where({ store_id: s.storeId, subscription_id: s.id, event_id: event.id })
        .whereNot('kind', 'event')
        .orderBy('id')
        .select('id');
      const attempts = ids.flatMap(({ id }) =>
        [1, 2, 3].map((attempt) => ({
          id: randomUUID(),
          store_id: s.storeId,
          subscription_id: s.id,
          delivery_id: Number(id),
          event_id: event.id,
          event_type: 'product.created',
          attempt,
          outcome: 'failed',
          response_status: 500,
          latency_ms: 1,
          error: 'The endpoint answered 500.',
          // Clocks that disagree: later attempts stamped earlier. The order is the sequence's.
          attempted_at: now - attempt,
        })),
      );
      for (let start = 0; start < attempts.length; start += 100) await h.db('webhook_attempts').insert(attempts.slice(start, start + 100));

      let entry: Record<string, unknown> = {};
      const read = await rowsReadBy(async () => {
        entry = (await entryCall(s, event.id)).body.data;
      });
      const shown = entry.attempts as { id: string; attempt: number }[];
      expect(entry).toMatchObject({ state: 'succeeded', source: 'recover', queued_count: 301, attempts_count: 901 });
      expect(shown).toHaveLength(ATTEMPTS_SHOWN);
      const latest = attempts.slice(-ATTEMPTS_SHOWN);
      expect(shown.map((attempt) => attempt.id)).toEqual(latest.map((attempt) => attempt.id));
      expect(shown.at(-1)?.attempt).toBe(3);
      // One row of sums, the deliveries that hold the 50 latest attempts (17 of 3), those 50 attempts.
      expect(read).toBeGreaterThan(ATTEMPTS_SHOWN);
      expect(read).toBeLessThanOrEqual(1 + Math.ceil(ATTEMPTS_SHOWN / 3) + 1 + ATTEMPTS_SHOWN);
      const listed = await rowsReadBy(async () => expect(eventIdsOf(await logCall(s))).toEqual([event.id]));
      expect(listed).toBe(read);
    });

    it('lists an attempt stamped before its delivery was queued (clocks of two instances), by its order', async () => {
      const s = await hooked();
      const event = await deliveredAtTheSecondAttempt(s, 'Skewed');
      const [delivery] = await h.db('webhook_deliveries').where({ store_id: s.storeId, subscription_id: s.id, event_id: event.id }).select('id', 'created_at');
      // The first attempt's worker ran 5 s behind the instance that queued the delivery; the second's, 10 s.
      await h
        .db('webhook_attempts')
        .where({ store_id: s.storeId, delivery_id: delivery.id, attempt: 1 })
        .update({ attempted_at: Number(delivery.created_at) - 5_000 });
      await h
        .db('webhook_attempts')
        .where({ store_id: s.storeId, delivery_id: delivery.id, attempt: 2 })
        .update({ attempted_at: Number(delivery.created_at) - 10_000 });
      const entry = (await entryCall(s, event.id)).body.data;
      expect(entry).toMatchObject({ state: 'succeeded', attempts_count: 2 });
      expect(entry.attempts.map((attempt: { attempt: number; outcome: string }) => [attempt.attempt, attempt.outcome])).toEqual([
        [1, 'failed'],
        [2, 'succeeded'],
      ]);
    });

    it("shows a reason stored before, which quoted an address, in today's words", async () => {
      const s = await hooked();
      receiver.answer(s.path, 500);
      const event = await productCreated(s, 'Refused long ago');
      await drain();
      await h.db('webhook_attempts').where({ store_id: s.storeId, subscription_id: s.id, event_id: event.id }).update({
        response_status: null,
        error: 'EREFUSEDADDRESS: hooks.example.com resolves to 10.1.2.3, which is in a range webhooks may not reach (private)',
      });
      const [attempt] = (await entryCall(s, event.id)).body.data.attempts;
      expect(attempt).toMatchObject({ error_class: 'address_refused', error: 'The endpoint resolves to a non-public address.' });
    });
  });

  describe("a paused subscription's log", () => {
    it('says which entries wait for the resume (paused, no next attempt); a replay sent meanwhile has its time', async () => {
      const s = await hooked();
      const { delivered, retrying } = await deliveredAndRetrying(s);
      const retryAt = iso(h.clock.now() + SCHEDULE[0]!);
      expect((await entryCall(s, retrying.id)).body.data).toMatchObject({ state: 'pending', paused: false, next_attempt_at: retryAt });
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'paused' });
      h.clock.advance(10 * SCHEDULE[0]!);
      const held = (await entryCall(s, retrying.id)).body.data;
      expect(held).toMatchObject({ state: 'pending', paused: true, next_attempt_at: null, finished_at: null });
      expect((await logCall(s, 'state=pending')).body.data).toEqual([held]);
      // A replay is sent while paused: its entry is pending with a time, not paused.
      const replay = await postReplay(h.app, s.storeId, s.subscriber.token, s.id, {
        from: iso(delivered.occurred_at),
        to: iso(Number(delivered.occurred_at) + 1),
      });
      expect(replay.body.data.events_count).toBe(1);
      expect((await entryCall(s, delivered.id)).body.data).toMatchObject({ state: 'pending', paused: false, next_attempt_at: iso(h.clock.now()) });
      await patchSubscription(h.app, s.storeId, s.subscriber.token, s.id, { state: 'active' });
      expect((await entryCall(s, retrying.id)).body.data).toMatchObject({ state: 'pending', paused: false, next_attempt_at: retryAt });
      receiver.answer(s.path, 200);
      await drain();
      expect((await entryCall(s, retrying.id)).body.data).toMatchObject({ state: 'succeeded', paused: false, next_attempt_at: null });
    });
  });

  // Last: it moves the suite's clock 30 days on.
  it('keeps an entry as long as its event: 30 days after it occurred it is not listed, is EVENT_EXPIRED, and housekeeping deletes its deliveries and attempts', async () => {
    const s = await hooked();
    const old = await deliveredAtTheSecondAttempt(s, 'Old');
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
