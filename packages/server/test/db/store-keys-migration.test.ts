import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { migrations } from '../../src/db/migrations';
import { testDatabases } from '../support/databases';

type Entry = (typeof migrations)[number];
const sourceOf = (entries: readonly Entry[]): Knex.MigrationSource<Entry> => ({
  getMigrations: async () => [...entries],
  getMigrationName: (entry) => entry.name,
  getMigration: async (entry) => entry.migration,
});
const THIS = '018_store_keys';
const before = sourceOf(
  migrations.slice(
    0,
    migrations.findIndex((entry) => entry.name === THIS),
  ),
);
const upTo = sourceOf(migrations.slice(0, migrations.findIndex((entry) => entry.name === THIS) + 1));

const NOW = 1_795_338_000_000;

/** A store with a little of everything 018 re-keys; its deliveries name their store once 018 has run (`keyed`). */
async function storeRows(db: Knex, name: string, keyed = false) {
  const ownerId = randomUUID();
  const storeId = randomUUID();
  const appId = randomUUID();
  const versionId = randomUUID();
  const installationId = randomUUID();
  const subscriptionId = randomUUID();
  await db('store_owners').insert({ id: ownerId, email: `${name}-${ownerId}@example.com`, name, password_hash: 'scrypt$x', created_at: NOW });
  await db('stores').insert({ id: storeId, owner_id: ownerId, name, domain: `${name}-${storeId}.example.com`, created_at: NOW });
  await db('apps').insert({ id: appId, name, created_at: NOW });
  const urls = { redirect_urls: '[]', launch_url: 'https://app.example.com', required_scopes: '[]', optional_scopes: '[]' };
  await db('app_versions').insert({ id: versionId, app_id: appId, number: 1, ...urls, created_at: NOW });
  await db('installations').insert({
    id: installationId,
    store_id: storeId,
    app_id: appId,
    version_id: versionId,
    granted_scopes: '[]',
    status: 'active',
    installed_at: NOW,
  });
  const times = { created_at: NOW, updated_at: NOW };
  const [category] = await db('categories').insert({ store_id: storeId, name, name_key: name, ...times }, ['id']);
  const [product] = await db('products').insert({ store_id: storeId, name, product_kind: 'physical', category_id: category.id, ...times }, ['id']);
  const [customer] = await db('customers').insert({ store_id: storeId, name, created_at: NOW }, ['id']);
  const money = { subtotal_halalas: 100, discount_halalas: 0, shipping_halalas: 0, tax_halalas: 0, total_halalas: 100 };
  const [order] = await db('orders').insert(
    { store_id: storeId, reference: `R-${name}`, status: 'pending', payment_status: 'pending', customer_id: customer.id, ...money, ...times },
    ['id'],
  );
  const line = { quantity: 1, unit_price_halalas: 100, total_halalas: 100, discount_share_halalas: 0, product_kind: 'physical' };
  await db('order_items').insert({ store_id: storeId, order_id: order.id, product_id: product.id, name, category_id: category.id, ...line });
  await db('webhook_subscriptions').insert({
    id: subscriptionId,
    store_id: storeId,
    installation_id: installationId,
    endpoint_url: 'https://hooks.example.com',
    event_types: '[]',
    payload_version: 1,
    state: 'active',
    secret_generation: 1,
    secret_sealed: 'sealed',
    issued_scopes: '[]',
    ...times,
  });
  const delivery = {
    ...(keyed ? { store_id: storeId } : {}),
    subscription_id: subscriptionId,
    event_type: 'order.created',
    kind: 'event',
    state: 'pending',
    next_attempt_at: NOW,
    created_at: NOW,
  };
  await db('webhook_deliveries').insert([
    { ...delivery, event_id: randomUUID(), event_occurred_at: NOW },
    { ...delivery, event_id: randomUUID(), event_occurred_at: NOW },
  ]);
  await db('webhook_queues').insert({ subscription_id: subscriptionId, store_id: storeId, next_due_at: NOW });
  await db('webhook_attempts').insert({
    id: randomUUID(),
    subscription_id: subscriptionId,
    event_id: randomUUID(),
    event_type: 'order.created',
    attempt: 1,
    outcome: 'failed',
    latency_ms: 5,
    attempted_at: NOW,
  });
  return { storeId, subscriptionId, productId: product.id as number, orderId: order.id as number };
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => String(error),
  );

describe.each(testDatabases())('migration 018 (keys led by the store) on $name', (testDatabase) => {
  let db: Knex;
  beforeAll(async () => {
    db = await testDatabase.open();
  });
  afterAll(() => testDatabase.close());

  it('fills each delivery with its subscription store on a database with rows, keeps every row, and goes back down', async () => {
    await db.migrate.latest({ migrationSource: before });
    const first = await storeRows(db, 'first');
    const second = await storeRows(db, 'second');
    const counts = async () =>
      Object.fromEntries(
        await Promise.all(
          ['products', 'orders', 'order_items', 'webhook_deliveries', 'webhook_queues', 'webhook_attempts'].map(async (table) => [
            table,
            Number((await db(table).count({ n: '*' }))[0]?.n),
          ]),
        ),
      );
    const rowsBefore = await counts();

    await db.migrate.latest({ migrationSource: upTo });
    expect(await counts()).toEqual(rowsBefore);
    for (const store of [first, second]) {
      const stores = await db('webhook_deliveries').where({ subscription_id: store.subscriptionId }).distinct('store_id');
      expect(stores).toEqual([{ store_id: store.storeId }]);
    }
    // The queue's upsert names (store_id, subscription_id) on both databases.
    await db('webhook_queues')
      .insert({ store_id: first.storeId, subscription_id: first.subscriptionId, next_due_at: NOW - 1 })
      .onConflict(['store_id', 'subscription_id'])
      .merge(['next_due_at']);
    expect(await db('webhook_queues').where({ subscription_id: first.subscriptionId }).select('next_due_at')).toEqual([{ next_due_at: NOW - 1 }]);

    await db.migrate.down({ migrationSource: upTo });
    expect(await db.schema.hasColumn('webhook_deliveries', 'store_id')).toBe(false);
    expect(await counts()).toEqual(rowsBefore);
    await db.migrate.latest({ migrationSource: upTo });
    expect(Number((await db('webhook_deliveries').whereNull('store_id').count({ n: '*' }))[0]?.n)).toBe(0);
  });

  if (testDatabase.name === 'postgres') {
    it('refuses, on PostgreSQL, a reference to another store row; a delivery without its store gets its subscription’s until the contract phase, then is refused', async () => {
      const first = await storeRows(db, 'third', true);
      const second = await storeRows(db, 'fourth', true);
      const line = { quantity: 1, unit_price_halalas: 1, total_halalas: 1, discount_share_halalas: 0, product_kind: 'physical', name: 'x' };
      // The order is the second store's: the composite reference (store_id, order_id) finds no such order.
      expect(await failure(db('order_items').insert({ store_id: first.storeId, order_id: second.orderId, product_id: first.productId, ...line }))).toContain(
        'order_items_order_id_foreign',
      );
      const delivery = (row: Record<string, unknown> = {}) =>
        db('webhook_deliveries').insert({
          subscription_id: first.subscriptionId,
          event_id: randomUUID(),
          event_type: 'order.created',
          kind: 'event',
          state: 'pending',
          next_attempt_at: NOW,
          created_at: NOW,
          event_occurred_at: NOW,
          ...row,
        });
      // The previous release's fan-out writes no store_id: the expand phase's trigger gives the subscription's.
      const [made] = await delivery().returning(['store_id']);
      expect(made).toEqual({ store_id: first.storeId });
      expect(await failure(delivery({ store_id: second.storeId }))).toContain('webhook_deliveries_subscription_id_foreign');
      const contract = migrations.find((entry) => entry.name === THIS)?.contract;
      await contract?.up(db);
      expect(await failure(delivery())).toContain('store_id');
      await contract?.down?.(db);
    });
  }
});
