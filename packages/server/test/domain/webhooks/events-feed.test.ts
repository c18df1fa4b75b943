import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { uuidV7, uuidV7Time } from '../../../src/core/ids';
import type { Dispatcher } from '../../../src/delivery/dispatcher';
import { fanOut } from '../../../src/delivery/fan-out';
import { createProduct } from '../../../src/domain/catalog/products/changes';
import { createCustomer } from '../../../src/domain/storefront/customers/changes';
import { placeOrder } from '../../../src/domain/storefront/orders/changes';
import { runHousekeeping } from '../../../src/jobs/housekeeping';
import { findInstallationOf, uninstall } from '../../../src/platform/installations';
import type { Services } from '../../../src/services/container';
import { expectError } from '../../support/auth-steps';
import { insertProduct } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { type AppFixture, createTestApp, createTestStore, installWithTokens, type StoreFixture, suiteHarness } from '../../support/harness';
import { walkList } from '../../support/list-walk';
import { expectWellFormedDelivery, type Receiver } from '../../support/webhook-receiver';
import { deliverySetup, patchSubscription, postAction, postReplay, subscribe } from '../../support/webhooks';

const DAY_MS = 24 * 60 * 60 * 1000;
const MINUTE_MS = 60 * 1000;
const SCHEDULE = [1000];

interface StoredRow {
  id: string;
  type: string;
  payload: string;
  occurred_at: number | string;
  installation_id: string | null;
}

describe.each(testDatabases())('the events feed on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let receiver: Receiver;
  let services: Services;
  let dispatcher: Dispatcher;

  beforeAll(async () => {
    ({ receiver, services, dispatcher } = await deliverySetup(h, SCHEDULE));
  });

  /** Runs the dispatcher until nothing is due. */
  async function drain(): Promise<void> {
    while ((await dispatcher.runOnce()) > 0);
  }

  /** An app installed in the store with these scopes: its token, installation and client (to install it again for a fresh token). */
  interface Reader {
    token: string;
    installationId: string;
    client: AppFixture;
  }

  async function reader(store: StoreFixture, scopes: string[]): Promise<Reader> {
    const client = await createTestApp(h, { required: scopes, optional: [] });
    const tokens = await installWithTokens(h, store, client, scopes);
    const installation = await findInstallationOf(h.db, store.store.id, client.app.id);
    return { token: tokens.access_token, installationId: installation?.id as string, client };
  }

  /** The same installation's new token, as the app gets on its next consent. */
  const freshToken = async (store: StoreFixture, who: Reader, scopes: string[]) => (await installWithTokens(h, store, who.client, scopes)).access_token;

  const eventsCall = (storeId: string, token: string, query = '') =>
    request(h.app)
      .get(`/stores/${storeId}/v1/events${query === '' ? '' : `?${query}`}`)
      .set('Authorization', `Bearer ${token}`);
  const eventCall = (storeId: string, token: string, id: string) =>
    request(h.app).get(`/stores/${storeId}/v1/events/${id}`).set('Authorization', `Bearer ${token}`);

  /** The store itself writes a product (product.created), a millisecond after the last event unless told. */
  async function productCreated(storeId: string, name: string, advance = 1): Promise<void> {
    h.clock.advance(advance);
    await createProduct(h.db, { storeId, installationId: null, now: h.clock.now() }, { name, product_kind: 'physical' });
  }

  /** A customer's order of a product for sale: order.created and the stock's events. */
  async function orderPlaced(storeId: string): Promise<void> {
    h.clock.advance(1);
    const shopper = { storeId, installationId: null, now: h.clock.now() };
    const productId = await insertProduct(h.db, storeId, { status: 'active', price_state: 'ready', price_halalas: 5_000, quantity: 5 });
    const customer = await createCustomer(h.db, shopper, { name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' });
    await placeOrder(h.db, shopper, { customerId: customer.id, items: [{ productId, quantity: 1 }] });
  }

  /** The store's stored events, newest first (the feed's order). */
  const storedEvents = async (storeId: string): Promise<StoredRow[]> =>
    h
      .db('outbox_events')
      .where({ store_id: storeId })
      .orderBy([
        { column: 'occurred_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]);

  const idsOf = (response: request.Response): string[] => (response.body.data as { id: string }[]).map((event) => event.id);
  const typesOf = (response: request.Response): string[] => (response.body.data as { type: string }[]).map((event) => event.type);

  /** Every page of a walk, following next_cursor. */
  async function walk(storeId: string, token: string, query: string): Promise<{ ids: string[]; pages: number }> {
    const walk = await walkList<{ id: string }>((cursor) =>
      eventsCall(storeId, token, cursor === null ? query : `${query}&cursor=${encodeURIComponent(cursor)}`),
    );
    return { ids: walk.items.map((event) => event.id), pages: walk.pages.length };
  }

  describe('events.list and events.get', () => {
    it("lists the store's events newest first, each its stored webhook body under an id that is a UUIDv7 of when it occurred", async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      await productCreated(storeId, 'First', 1000);
      await productCreated(storeId, 'Second', 1000);
      await productCreated(storeId, 'Third', 1000);
      const catalog = await reader(store, ['products:read']);
      const response = await eventsCall(storeId, catalog.token);
      expect(response.status).toBe(200);
      const stored = await storedEvents(storeId);
      expect(stored).toHaveLength(3);
      expect(response.body.data).toEqual(stored.map((row) => JSON.parse(row.payload)));
      expect(response.body.data.map((event: { data: { product: { name: string } } }) => event.data.product.name)).toEqual(['Third', 'Second', 'First']);
      expect(response.body.meta).toEqual({ request_id: expect.any(String), has_more: false, limit: 25, next_cursor: null, consistency: 'live_keyset' });
      for (const row of stored) expect(uuidV7Time(row.id)).toBe(Number(row.occurred_at));
      const one = await eventCall(storeId, catalog.token, stored[1]!.id);
      expect(one.status).toBe(200);
      expect(one.body.data).toEqual(JSON.parse(stored[1]!.payload));
    });

    it('answers an event with the id and the body its webhook delivery carried, so push and pull deduplicate by one id', async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      const subscriber = await reader(store, ['orders:read']);
      const path = `/hooks/${randomUUID()}`;
      await subscribe(
        h,
        storeId,
        { token: subscriber.token, installationId: subscriber.installationId, appId: subscriber.client.app.id },
        {
          endpoint_url: receiver.url(path),
          event_types: ['order.created'],
        },
      );
      await orderPlaced(storeId);
      await drain();
      const [delivery] = receiver.receivedAt(path);
      const delivered = expectWellFormedDelivery(delivery!);
      const pulled = await eventCall(storeId, subscriber.token, String(delivery!.headers['webhook-id']));
      expect(pulled.status).toBe(200);
      expect(pulled.body.data).toEqual(delivered);
      // Without customers:read, as the delivery: no e-mail or mobile.
      expect(JSON.stringify(pulled.body.data)).not.toContain('noura@example.com');
      const listed = await eventsCall(storeId, subscriber.token, 'type=order.created');
      expect(listed.body.data).toEqual([delivered]);
    });

    it("lists only what the token's scopes allow: order events need orders:read, a customer's contact customers:read", async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      await productCreated(storeId, 'A product');
      await orderPlaced(storeId);
      const stored = await storedEvents(storeId);
      const orderCreated = stored.find((row) => row.type === 'order.created') as StoredRow;
      const productOnly = await reader(store, ['products:read']);
      const products = await eventsCall(storeId, productOnly.token);
      expect(products.status).toBe(200);
      expect(typesOf(products).every((type) => type.startsWith('product.'))).toBe(true);
      expect(typesOf(products)).toContain('product.created');
      expectError(await eventCall(storeId, productOnly.token, orderCreated.id), 404, 'NOT_FOUND');
      expect((await eventsCall(storeId, productOnly.token, 'type=order.created')).body.data).toEqual([]);

      const orders = await reader(store, ['orders:read']);
      const ordersOnly = await eventsCall(storeId, orders.token);
      expect(typesOf(ordersOnly)).toEqual(stored.filter((row) => row.type.startsWith('order.')).map((row) => row.type));
      const hidden = (await eventCall(storeId, orders.token, orderCreated.id)).body.data;
      expect(hidden.data.order.customer).toEqual({ id: expect.any(Number), name: 'Noura Al-Harbi' });

      const contact = await reader(store, ['orders:read', 'customers:read']);
      const shown = (await eventCall(storeId, contact.token, orderCreated.id)).body.data;
      expect(shown).toEqual(JSON.parse(orderCreated.payload));
      expect(shown.data.order.customer).toMatchObject({ email: 'noura@example.com', mobile: '+966501234567' });

      const none = await reader(store, ['categories:read']);
      expect((await eventsCall(storeId, none.token)).body.data).toEqual([]);
    });

    it("lists app.uninstalled of the caller's own installation only, and never webhook.test", async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      const leaving = await reader(store, ['products:read']);
      const path = `/hooks/${randomUUID()}`;
      const { id: subscriptionId } = await subscribe(
        h,
        storeId,
        { token: leaving.token, installationId: leaving.installationId, appId: leaving.client.app.id },
        { endpoint_url: receiver.url(path), event_types: ['app.uninstalled'] },
      );
      expect((await postAction(h.app, storeId, leaving.token, subscriptionId, 'test')).status).toBe(200);
      const staying = await reader(store, ['products:read']);
      h.clock.advance(1);
      await uninstall(h.services, leaving.installationId);
      const [uninstalled] = await h.db('outbox_events').where({ store_id: storeId, type: 'app.uninstalled' });
      // Installed again: the same installation, which may read its own app.uninstalled.
      const back = await freshToken(store, leaving, ['products:read']);
      expect((await findInstallationOf(h.db, storeId, leaving.client.app.id))?.id).toBe(leaving.installationId);
      expect(idsOf(await eventsCall(storeId, back))).toEqual([uninstalled.id]);
      expect((await eventCall(storeId, back, uninstalled.id)).body.data).toEqual(JSON.parse(uninstalled.payload));
      expect(idsOf(await eventsCall(storeId, staying.token))).toEqual([]);
      expectError(await eventCall(storeId, staying.token, uninstalled.id), 404, 'NOT_FOUND');
      expect((await eventsCall(storeId, back, 'type=webhook.test')).body.data).toEqual([]);
    });

    it("refuses another store's token (404 STORE_NOT_FOUND), answers another store's event as unknown (404 NOT_FOUND), and needs a token", async () => {
      const store = await createTestStore(h);
      await productCreated(store.store.id, 'Here');
      const own = await reader(store, ['products:read']);
      const elsewhere = await createTestStore(h);
      await productCreated(elsewhere.store.id, 'There');
      const theirs = await reader(elsewhere, ['products:read']);
      const [theirEvent] = await storedEvents(elsewhere.store.id);
      expectError(await eventsCall(store.store.id, theirs.token), 404, 'STORE_NOT_FOUND');
      expectError(await eventCall(store.store.id, theirs.token, theirEvent!.id), 404, 'STORE_NOT_FOUND');
      expectError(await eventCall(store.store.id, own.token, theirEvent!.id), 404, 'NOT_FOUND');
      expectError(await eventCall(store.store.id, own.token, uuidV7(h.clock.now())), 404, 'NOT_FOUND');
      expectError(await eventCall(store.store.id, own.token, randomUUID()), 404, 'NOT_FOUND');
      expectError(await request(h.app).get(`/stores/${store.store.id}/v1/events`), 401, 'UNAUTHENTICATED');
      expectError(await eventCall(store.store.id, own.token, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
      expectError(await eventsCall(store.store.id, own.token, 'colour=red'), 422, 'UNKNOWN_FIELD');
    });
  });

  describe('filters', () => {
    it('type takes one or more event types (the parameter repeated); an unknown one is INVALID_FILTER', async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      await productCreated(storeId, 'A product');
      await orderPlaced(storeId);
      const all = await reader(store, ['products:read', 'orders:read', 'inventory:read']);
      const stored = await storedEvents(storeId);
      const ofTypes = (...types: string[]) => stored.filter((row) => types.includes(row.type)).map((row) => row.id);
      expect(idsOf(await eventsCall(storeId, all.token, 'type=order.created'))).toEqual(ofTypes('order.created'));
      expect(idsOf(await eventsCall(storeId, all.token, 'type=order.created&type=product.created'))).toEqual(ofTypes('order.created', 'product.created'));
      expect(ofTypes('order.created', 'product.created')).toHaveLength(2);
      expectError(await eventsCall(storeId, all.token, 'type=order.shipped'), 400, 'INVALID_FILTER');
      expectError(await eventsCall(storeId, all.token, 'type=order.created&type=nope'), 400, 'INVALID_FILTER');
      expect((await eventsCall(storeId, all.token, 'type=review.created')).body.data).toEqual([]);
    });

    it('created_since and created_before are strict; before at or before since, or a date-time that is none, is INVALID_FILTER', async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      await productCreated(storeId, 'One', 60_000);
      await productCreated(storeId, 'Two', 60_000);
      await productCreated(storeId, 'Three', 60_000);
      const catalog = await reader(store, ['products:read']);
      const [three, two, one] = await storedEvents(storeId);
      const at = (row: StoredRow) => encodeURIComponent(new Date(Number(row.occurred_at)).toISOString());
      expect(idsOf(await eventsCall(storeId, catalog.token, `created_since=${at(one!)}`))).toEqual([three!.id, two!.id]);
      expect(idsOf(await eventsCall(storeId, catalog.token, `created_before=${at(three!)}`))).toEqual([two!.id, one!.id]);
      expect(idsOf(await eventsCall(storeId, catalog.token, `created_since=${at(one!)}&created_before=${at(three!)}`))).toEqual([two!.id]);
      // Any offset: one minute after `one` written in +03:00.
      const local = new Date(Number(one!.occurred_at) + 3 * 60 * MINUTE_MS).toISOString().replace('Z', '+03:00');
      expect(idsOf(await eventsCall(storeId, catalog.token, `created_since=${encodeURIComponent(local)}`))).toEqual([three!.id, two!.id]);
      expectError(await eventsCall(storeId, catalog.token, `created_since=${at(two!)}&created_before=${at(two!)}`), 400, 'INVALID_FILTER');
      expectError(await eventsCall(storeId, catalog.token, `created_since=${at(three!)}&created_before=${at(one!)}`), 400, 'INVALID_FILTER');
      expectError(await eventsCall(storeId, catalog.token, 'created_since=yesterday'), 400, 'INVALID_FILTER');
      expectError(await eventsCall(storeId, catalog.token, 'created_before=2026-02-30T00:00:00Z'), 400, 'INVALID_FILTER');
    });

    it("delivery selects by how the event's deliveries to the caller's subscriptions stand: pending over succeeded over failed", async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      const app = await reader(store, ['products:read']);
      const path = `/hooks/${randomUUID()}`;
      const subscriber = { token: app.token, installationId: app.installationId, appId: app.client.app.id };
      const { id } = await subscribe(h, storeId, subscriber, { endpoint_url: receiver.url(path), event_types: ['product.created'] });
      await productCreated(storeId, 'Delivered');
      await drain();
      receiver.answer(path, 500);
      await productCreated(storeId, 'Given up');
      await drain();
      h.clock.advance(SCHEDULE[0]!);
      await drain(); // the schedule is spent: failed, and the subscription paused
      receiver.answer(path, 200);
      await patchSubscription(h.app, storeId, app.token, id, { state: 'active' });
      await productCreated(storeId, 'Queued');
      await fanOut(services);
      await patchSubscription(h.app, storeId, app.token, id, { state: 'paused' });
      await productCreated(storeId, 'Missed while paused');
      await fanOut(services);
      const [missed, queued, givenUp, delivered] = await storedEvents(storeId);
      const outcome = async (delivery: string, token = app.token) => idsOf(await eventsCall(storeId, token, `delivery=${delivery}`));
      expect(await outcome('succeeded')).toEqual([delivered!.id]);
      expect(await outcome('failed')).toEqual([givenUp!.id]);
      expect(await outcome('pending')).toEqual([queued!.id]);
      expect(idsOf(await eventsCall(storeId, app.token))).toContain(missed!.id);
      // Another installation has no deliveries of them.
      const other = await reader(store, ['products:read']);
      expect(await outcome('succeeded', other.token)).toEqual([]);
      expectError(await eventsCall(storeId, app.token, 'delivery=lost'), 400, 'INVALID_FILTER');

      // Replayed, the given-up event is pending again, then delivered.
      const replay = await postReplay(h.app, storeId, app.token, id, {
        from: new Date(Number(givenUp!.occurred_at)).toISOString(),
        to: new Date(Number(givenUp!.occurred_at) + 1).toISOString(),
      });
      expect(replay.body.data.events_count).toBe(1);
      expect(await outcome('pending')).toEqual([queued!.id, givenUp!.id]);
      expect(await outcome('failed')).toEqual([]);
      await drain(); // a replay is sent while paused; the queued event waits for the resume
      expect(await outcome('succeeded')).toEqual([givenUp!.id, delivered!.id]);
      expect(await outcome('pending')).toEqual([queued!.id]);
    });
  });

  describe('paging', () => {
    it('walks every event once, newest first, events of one millisecond by id; the cursor keeps the filters, in any order of type', async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      for (let index = 0; index < 3; index += 1) await productCreated(storeId, `Apart ${index}`, 1000);
      for (let index = 0; index < 4; index += 1) await productCreated(storeId, `Together ${index}`, index === 0 ? 1000 : 0);
      const catalog = await reader(store, ['products:read']);
      const stored = await storedEvents(storeId);
      expect(new Set(stored.slice(0, 4).map((row) => Number(row.occurred_at))).size).toBe(1);
      const walked = await walk(storeId, catalog.token, 'limit=2');
      expect(walked).toEqual({ ids: stored.map((row) => row.id), pages: 4 });
      const byTypes = await walk(storeId, catalog.token, 'limit=3&type=product.updated&type=product.created');
      expect(byTypes.ids).toEqual(stored.map((row) => row.id));
      const first = await eventsCall(storeId, catalog.token, 'limit=3&type=product.created&type=product.updated');
      const cursor = encodeURIComponent(first.body.meta.next_cursor as string);
      expect((await eventsCall(storeId, catalog.token, `limit=3&type=product.updated&type=product.created&cursor=${cursor}`)).status).toBe(200);
      expectError(await eventsCall(storeId, catalog.token, `limit=3&type=product.created&cursor=${cursor}`), 400, 'INVALID_CURSOR');
      expectError(await eventsCall(storeId, catalog.token, `limit=3&cursor=${cursor}`), 400, 'INVALID_CURSOR');
      expectError(await eventsCall(storeId, catalog.token, 'limit=101'), 400, 'VALIDATION_FAILED');
    });

    it("refuses a cursor that is not this list's: tampered, of products.list, of another store; and expires it 15 minutes after the first page", async () => {
      const store = await createTestStore(h);
      const storeId = store.store.id;
      for (let index = 0; index < 3; index += 1) await productCreated(storeId, `Product ${index}`);
      const catalog = await reader(store, ['products:read']);
      const first = await eventsCall(storeId, catalog.token, 'limit=1');
      const cursor = first.body.meta.next_cursor as string;
      // Two characters of the tag changed (to others than they were: a tag may end in "AA").
      const tampered = `${cursor.slice(0, -2)}${cursor.endsWith('AA') ? 'BB' : 'AA'}`;
      expectError(await eventsCall(storeId, catalog.token, `limit=1&cursor=${encodeURIComponent(tampered)}`), 400, 'INVALID_CURSOR');
      const products = await request(h.app).get(`/stores/${storeId}/v1/products?limit=1`).set('Authorization', `Bearer ${catalog.token}`);
      expectError(await eventsCall(storeId, catalog.token, `limit=1&cursor=${encodeURIComponent(products.body.meta.next_cursor)}`), 400, 'INVALID_CURSOR');
      const elsewhere = await createTestStore(h);
      for (let index = 0; index < 2; index += 1) await productCreated(elsewhere.store.id, `Theirs ${index}`);
      const theirs = await reader(elsewhere, ['products:read']);
      const theirCursor = (await eventsCall(elsewhere.store.id, theirs.token, 'limit=1')).body.meta.next_cursor as string;
      expectError(await eventsCall(storeId, catalog.token, `limit=1&cursor=${encodeURIComponent(theirCursor)}`), 400, 'INVALID_CURSOR');
      h.clock.advance(15 * MINUTE_MS);
      // The access token lived 15 minutes too: the same app's next one.
      const later = await freshToken(store, catalog, ['products:read']);
      expectError(await eventsCall(storeId, later, `limit=1&cursor=${encodeURIComponent(cursor)}`), 400, 'CURSOR_EXPIRED');
    });
  });

  // Last: it moves the suite's clock 31 days on.
  it('keeps events 30 days: older ones are not listed and are EVENT_EXPIRED, also once deleted; an unknown v4 id stays NOT_FOUND', async () => {
    const store = await createTestStore(h);
    const storeId = store.store.id;
    await productCreated(storeId, 'Old');
    const [old] = await storedEvents(storeId);
    // An event of the days before ids were UUIDv7.
    const legacyId = randomUUID();
    await h.db('outbox_events').insert({ ...old, id: legacyId, installation_id: null, payload: old!.payload.replace(old!.id, legacyId) });
    h.clock.advance(30 * DAY_MS - 2);
    await productCreated(storeId, 'Within');
    const [within] = await storedEvents(storeId);
    const catalog = await reader(store, ['products:read']);
    const all = (await storedEvents(storeId)).map((row) => row.id);
    expect(all).toHaveLength(3);
    expect(idsOf(await eventsCall(storeId, catalog.token))).toEqual(all);
    h.clock.advance(1);
    // Exactly 30 days after it occurred, an event is past retention (housekeeping deletes it from then on).
    expect(idsOf(await eventsCall(storeId, catalog.token))).toEqual([within!.id]);
    expect(idsOf(await eventsCall(storeId, catalog.token, `created_since=${encodeURIComponent(new Date(0).toISOString())}`))).toEqual([within!.id]);
    expectError(await eventCall(storeId, catalog.token, old!.id), 404, 'EVENT_EXPIRED');
    expectError(await eventCall(storeId, catalog.token, legacyId), 404, 'EVENT_EXPIRED');
    expect((await eventCall(storeId, catalog.token, within!.id)).status).toBe(200);
    await fanOut(services);
    await runHousekeeping(h.services);
    expect(await h.db('outbox_events').whereIn('id', [old!.id, legacyId])).toEqual([]);
    expectError(await eventCall(storeId, catalog.token, old!.id), 404, 'EVENT_EXPIRED');
    expectError(await eventCall(storeId, catalog.token, legacyId), 404, 'NOT_FOUND');
    // Any v7 id of that age is past retention, whatever store it was of: the id alone says so.
    expectError(await eventCall(storeId, catalog.token, uuidV7(h.clock.now() - 31 * DAY_MS)), 404, 'EVENT_EXPIRED');
  });
});
