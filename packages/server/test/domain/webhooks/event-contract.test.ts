import { FIELD_READ_SCOPES, type ScopedSchema, type WebhookEventType, webhookEventCatalogue } from '@svc/contract';
import request from 'supertest';
import { toIso } from '../../../src/core/clock';
import { payloadFor } from '../../../src/domain/webhooks/payloads';
import { uninstall } from '../../../src/platform/installations';
import { seedDemoCatalog } from '../../../src/seeds/demo-catalog';
import { simulateStore } from '../../../src/seeds/simulation/run';
import { tokenWithScopes } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { createTestStore, type StoreFixture, suiteHarness } from '../../support/harness';
import { eventSchemaErrors } from '../../support/storefront-fixtures';

/*
 * Events are part of the contract: a simulated store (orders, payments, refunds, cancellations,
 * fulfilment, carts, reviews) and an uninstall write their events, and every outbox row is checked
 * against its schema and against what the spec says of when its type is sent. The rules are keyed by
 * every `WebhookEventType`, so an event type added to the spec fails `tsc` here until it has one.
 */

const NOW = Date.parse('2025-06-15T12:34:56.789Z');
const DAY = 86_400_000;
const RUN = { days: 20, orders: 60, seed: 7 };
const API_VERSION = '2026-10-15';

type Json = Record<string, unknown>;

interface OutboxRow {
  id: string;
  type: WebhookEventType;
  installation_id: string | null;
  occurred_at: number;
  payload: { id: string; type: string; api_version: string; store_id: string; occurred_at: string; data: Json };
}

interface Order {
  id: number;
  status: string;
  payment_status: string;
  items: Array<{ product_kind: string }>;
  created_at: string;
  paid_at: string | null;
  updated_at: string;
}

interface World {
  store: StoreFixture;
  events: OutboxRow[];
  orders: Order[];
  reviews: Json[];
  carts: Json[];
  adjustments: Json[];
  uninstalled: string;
}

const orderOf = (event: OutboxRow) => event.payload.data.order as Order;
const sameChange = (a: OutboxRow, b: OutboxRow) => a.occurred_at === b.occurred_at && JSON.stringify(a.payload.data) === JSON.stringify(b.payload.data);
const idsOf = (events: readonly OutboxRow[], key: string) =>
  events.map((event) => Number((event.payload.data[key] as { id: number }).id)).sort((a, b) => a - b);
const sortedIds = (rows: readonly { id: unknown }[]) => rows.map((row) => Number(row.id)).sort((a, b) => a - b);

/** What the spec's description of each event says of when it is sent, as checks over the world. */
const whenSent: Record<WebhookEventType, (events: OutboxRow[], world: World) => void> = {
  'app.uninstalled': (events, world) => {
    // "Sent when the store owner uninstalls the app": once, naming the installation.
    expect(events.map((event) => event.payload.data.installation_id)).toEqual([world.uninstalled]);
    expect(events[0]?.installation_id).toBe(world.uninstalled);
  },
  'order.created': (events, world) => {
    // "Sent when a shopper places an order. `data.order` is the order as it was then": once per order, pending and unpaid.
    expect(idsOf(events, 'order')).toEqual(sortedIds(world.orders));
    for (const event of events) {
      expect(orderOf(event)).toMatchObject({ status: 'pending', payment_status: 'unpaid', paid_at: null });
      expect(event.payload.occurred_at).toBe(orderOf(event).created_at);
    }
  },
  'order.paid': (events, world) => {
    // "Sent when the payment for an order is taken (`payment_status` becomes `paid`)": once per paid order, at its paid_at.
    expect(idsOf(events, 'order')).toEqual(sortedIds(world.orders.filter((order) => order.paid_at !== null)));
    for (const event of events) {
      expect(orderOf(event).payment_status).toBe('paid');
      expect(event.payload.occurred_at).toBe(orderOf(event).paid_at);
    }
  },
  'order.cancelled': (events, world) => {
    // "Sent when an order is cancelled (`status` becomes `cancelled`)": once per cancelled order.
    expect(idsOf(events, 'order')).toEqual(sortedIds(world.orders.filter((order) => order.status === 'cancelled')));
    for (const event of events) expect(orderOf(event).status).toBe('cancelled');
  },
  'order.updated': (events, world) => {
    // "Sent when an order changes after it was placed … including the changes that also send
    // `order.paid` and `order.cancelled`. `data.order` is the order after the change."
    const specific = world.events.filter((event) => event.type === 'order.paid' || event.type === 'order.cancelled');
    const standalone = events.filter((event) => !specific.some((other) => sameChange(event, other)));
    expect(events).toHaveLength(specific.length + standalone.length);
    for (const event of events) expect(event.payload.occurred_at).toBe(orderOf(event).updated_at);
    // The changes that send only order.updated: fulfilment steps and refunds of orders that stay.
    const ships = (order: Order) => order.items.some((item) => item.product_kind === 'physical');
    const expected = world.orders.reduce((sum, order) => {
      const steps = order.status === 'shipped' ? 1 : order.status === 'delivered' ? (ships(order) ? 2 : 1) : 0;
      return sum + steps + (order.payment_status === 'refunded' && order.status !== 'cancelled' ? 1 : 0);
    }, 0);
    expect(standalone).toHaveLength(expected);
    for (const event of standalone) expect(['shipped', 'delivered', 'processing']).toContain(orderOf(event).status);
  },
  'product.created': (events) => {
    // "Sent when a product is created … `data.product` is the product as created": its first version.
    for (const event of events) expect((event.payload.data.product as { resource_version: number }).resource_version).toBe(1);
  },
  'product.updated': (events, world) => {
    // "A stock change sends `inventory.adjusted` (with the adjustment) and this event too, since the
    // product's `resource_version` rises with it."
    const versions = events.map((event) => event.payload.data.product as { id: number; resource_version: number });
    expect(new Set(versions.map(({ id, resource_version }) => `${id}@${resource_version}`)).size).toBe(versions.length);
    for (const adjusted of world.events.filter((event) => event.type === 'inventory.adjusted')) {
      const adjustment = adjusted.payload.data.adjustment as { product_id: number; resource_version: number };
      const product = events.find((event) => {
        const changed = event.payload.data.product as { id: number; resource_version: number };
        return event.occurred_at === adjusted.occurred_at && changed.id === adjustment.product_id && changed.resource_version === adjustment.resource_version;
      });
      expect(product).toBeDefined();
    }
  },
  'inventory.adjusted': (events, world) => {
    // "Sent when a product's stock changes … `data.adjustment` is the recorded adjustment": once per adjustment.
    expect(idsOf(events, 'adjustment')).toEqual(sortedIds(world.adjustments as Array<{ id: unknown }>));
  },
  'review.created': (events, world) => {
    // "Sent when a shopper leaves a review … usually `pending` moderation": once per review.
    expect(idsOf(events, 'review')).toEqual(sortedIds(world.reviews as Array<{ id: unknown }>));
    for (const event of events) expect((event.payload.data.review as { status: string }).status).toBe('pending');
  },
  'abandoned_cart.created': (events, world) => {
    // "Sent when a checkout … is recorded as an abandoned cart": once per cart.
    expect(idsOf(events, 'cart')).toEqual(sortedIds(world.carts as Array<{ id: unknown }>));
  },
  'webhook.test': (events) => {
    // "Sent when an app calls `webhooks.test` … immediately, in one attempt": never through the outbox.
    expect(events).toEqual([]);
  },
};

/** The object at `path` (property names) in `value`. */
const at = (value: unknown, path: readonly string[]): Json | undefined =>
  path.reduce<unknown>((node, key) => (node && typeof node === 'object' ? (node as Json)[key] : undefined), value) as Json | undefined;

const scopedFieldsOf = (schema: ScopedSchema): Array<[string, readonly string[]]> => Object.entries(FIELD_READ_SCOPES[schema]);

describe.each(testDatabases())('events as the contract describes them, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });
  let world: World;

  beforeAll(async () => {
    h.clock.set(NOW - 400 * DAY);
    const store = await createTestStore(h, 'Oud House');
    const storeId = store.store.id;
    await seedDemoCatalog(h.services, storeId);
    // An app installed before the run, which the owner uninstalls after it: `app.uninstalled`.
    await tokenWithScopes(h, store, ['orders:read']);
    h.clock.set(NOW);
    await simulateStore(h.services, { storeId, ...RUN });
    const installation = await h.db('installations').where({ store_id: storeId }).first('id');
    h.clock.advance(1000);
    await uninstall(h.services, String(installation.id));
    const rows = await h
      .db('outbox_events')
      .where({ store_id: storeId })
      .orderBy('occurred_at')
      .select('id', 'type', 'installation_id', 'occurred_at', 'payload');
    const events = rows.map((row) => ({ ...row, occurred_at: Number(row.occurred_at), payload: JSON.parse(row.payload) }) as OutboxRow);
    const orders = (await h.db('orders').where({ store_id: storeId }).select('id')).map((row) => Number(row.id));
    // The final orders as the API shows them (response validation on), read by another app: the first is uninstalled.
    const token = await tokenWithScopes(h, store, ['orders:read']);
    const answers: Order[] = [];
    for (const id of orders) {
      const response = await request(h.app).get(`/stores/${storeId}/v1/orders/${id}`).set('Authorization', `Bearer ${token}`);
      expect(response.status).toBe(200);
      answers.push(response.body.data as Order);
    }
    world = {
      store,
      events,
      orders: answers,
      reviews: await h.db('reviews').where({ store_id: storeId }).select('id'),
      carts: await h.db('abandoned_carts').where({ store_id: storeId }).select('id'),
      adjustments: await h.db('inventory_adjustments').where({ store_id: storeId }).select('id'),
      uninstalled: String(installation.id),
    };
  }, 300_000);

  it('writes events of every kind the simulation plays, and only types of the contract', () => {
    const types = new Set(world.events.map((event) => event.type));
    const contract = new Set(webhookEventCatalogue.map((event) => event.type));
    for (const type of types) expect(contract.has(type)).toBe(true);
    for (const played of [
      'order.created',
      'order.paid',
      'order.updated',
      'order.cancelled',
      'product.updated',
      'inventory.adjusted',
      'review.created',
      'abandoned_cart.created',
      'app.uninstalled',
    ]) {
      expect(types).toContain(played);
    }
  });

  it('writes every event valid against its schema in the bundled spec, in an envelope that names it', () => {
    for (const event of world.events) {
      expect(eventSchemaErrors(event)).toEqual([]);
      expect(event.payload).toMatchObject({
        id: event.id,
        type: event.type,
        api_version: API_VERSION,
        store_id: world.store.store.id,
        occurred_at: toIso(event.occurred_at),
      });
    }
  });

  it.each(webhookEventCatalogue.map((event) => event.type))('sends %s when the spec says it is sent', (type) => {
    whenSent[type](
      world.events.filter((event) => event.type === type),
      world,
    );
  });

  it('sends, for each event the spec pairs with a generic *.updated, that event for the same change: same time, same data', () => {
    for (const definition of webhookEventCatalogue.filter((event) => event.alsoSends !== null)) {
      for (const specific of world.events.filter((event) => event.type === definition.type)) {
        const generic = world.events.filter((event) => event.type === definition.alsoSends && sameChange(event, specific));
        expect(generic).toHaveLength(1);
        expect(generic[0]?.installation_id).toBe(specific.installation_id);
      }
    }
  });

  it('keeps the scoped fields in the stored event and sends them only to a receiver holding their scopes', () => {
    let seen = 0;
    for (const event of world.events) {
      const definition = webhookEventCatalogue.find((entry) => entry.type === event.type);
      const stored = JSON.stringify(event.payload);
      for (const location of definition?.scopedFields ?? []) {
        const fields = scopedFieldsOf(location.schema);
        const allScopes = new Set(fields.flatMap(([, scopes]) => scopes));
        const withScopes = JSON.parse(payloadFor(stored, event.type, allScopes, API_VERSION));
        const without = JSON.parse(payloadFor(stored, event.type, new Set(), API_VERSION));
        expect(withScopes).toEqual(event.payload);
        for (const [field] of fields) {
          if (at(event.payload, location.path)?.[field] !== undefined) seen += 1;
          expect(at(without, location.path)).toBeDefined();
          expect(at(without, location.path)).not.toHaveProperty(field);
        }
        expect(eventSchemaErrors({ ...event, payload: without })).toEqual([]);
      }
    }
    // The simulated shoppers mostly give an e-mail: the stored events carry them.
    expect(seen).toBeGreaterThan(0);
  });

  /** Every operation whose answers hold a scoped schema, with the scope it needs itself. */
  const readers = [
    { path: 'orders', scope: 'orders:read' },
    { path: 'reviews', scope: 'reviews:read' },
    { path: 'abandoned-carts', scope: 'carts:read' },
  ];

  it.each(readers)('answers $path (list and get) without the scoped fields unless the token holds their scopes', async ({ path, scope }) => {
    const fields = scopedFieldsOf('CustomerSummary');
    const fieldScopes = [...new Set(fields.flatMap(([, scopes]) => scopes))];
    const storeId = world.store.store.id;
    const shown = { with: 0, without: 0 };
    for (const [held, key] of [
      [[scope], 'without'],
      [[scope, ...fieldScopes], 'with'],
    ] as const) {
      const token = await tokenWithScopes(h, world.store, [...held]);
      const list = await request(h.app).get(`/stores/${storeId}/v1/${path}`).query({ limit: 100 }).set('Authorization', `Bearer ${token}`);
      expect(list.status).toBe(200);
      const records = list.body.data as Array<{ id: number; customer: Json }>;
      expect(records.length).toBeGreaterThan(0);
      const one = await request(h.app).get(`/stores/${storeId}/v1/${path}/${records[0]?.id}`).set('Authorization', `Bearer ${token}`);
      expect(one.status).toBe(200);
      for (const record of [...records, one.body.data as { customer: Json }]) {
        for (const [field] of fields) if (record.customer[field] !== undefined) shown[key] += 1;
      }
    }
    expect(shown.without).toBe(0);
    expect(shown.with).toBeGreaterThan(0);
  });
});
