import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { migrateToLatest, rollbackAll } from '../../src/db/migrate';
import { brokenUniqueIndex } from '../../src/db/transactions';
import { testDatabases } from '../support/databases';

const TABLES = [
  'store_owners',
  'stores',
  'apps',
  'app_versions',
  'client_secrets',
  'installations',
  'authorization_codes',
  'grants',
  'token_operations',
  'tokens',
  'launch_tokens',
  'dashboard_sessions',
  'outbox_events',
  'authorization_requests',
  'api_quota_counters',
  'service_keys',
  'idempotency_keys',
  'categories',
  'products',
  'inventory_adjustments',
  'digital_units',
  'sign_in_limits',
  'customers',
  'coupons',
  'orders',
  'order_items',
  'payments',
  'abandoned_carts',
  'abandoned_cart_items',
  'reviews',
  'daily_sales',
  'daily_customer_sales',
  'daily_product_sales',
  'daily_category_sales',
  'pages',
  'webhook_subscriptions',
  'webhook_deliveries',
  'webhook_attempts',
  'replica_read_positions',
  'store_rollup_versions',
  'sealing_key_check',
  'api_version_usage',
  'webhook_queues',
];

describe.each(testDatabases())('schema on $name', (testDatabase) => {
  let database: Knex;
  beforeAll(async () => {
    database = await testDatabase.open();
  });
  afterAll(() => testDatabase.close());

  it('migrates an empty database to the latest schema, and a second run applies nothing', async () => {
    expect(await migrateToLatest(database)).toEqual([
      '001_platform',
      '002_oauth_state',
      '003_store_api',
      '004_catalog',
      '005_sign_in_limits',
      '006_storefront',
      '007_pages',
      '008_webhooks',
      '009_rollup_versions',
      '010_sealing_key_check',
      '011_api_versions',
      '012_delivery_claim_order',
      '013_api_quota_counters',
      '014_event_trace',
      '015_event_feed',
      '016_sync_indexes',
      '017_webhook_queues',
      '018_store_keys',
      '020_read_positions',
    ]);
    for (const table of TABLES) expect(await database.schema.hasTable(table)).toBe(true);
    expect(await migrateToLatest(database)).toEqual([]);
  });

  it('keeps instants as exact epoch milliseconds and refuses a second store with the same domain', async () => {
    const owner = { id: randomUUID(), email: `owner-${randomUUID()}@example.com`, name: 'Noura', password_hash: 'scrypt$x', created_at: 1795338000123 };
    await database('store_owners').insert(owner);
    const store = { id: randomUUID(), owner_id: owner.id, name: 'Oud House', domain: 'oud-house.example.com', created_at: 1795338000456 };
    await database('stores').insert(store);
    const read = await database('stores').where({ id: store.id }).first();
    expect(read).toMatchObject({ created_at: 1795338000456, currency: 'SAR', timezone: 'Asia/Riyadh', routing_state: 'active', route_epoch: 1 });
    // The driver's error is read as the unique index it broke (better-sqlite3's errors come from
    // another realm under jest, so they are inspected, not matched with instanceof).
    const refused = await database('stores')
      .insert({ ...store, id: randomUUID() })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(brokenUniqueIndex(refused)).toContain('domain');
    expect(brokenUniqueIndex(new Error('UNIQUE constraint failed: stores.domain'))).toBeUndefined();
    const [stored] = await database('stores').where({ domain: store.domain }).count({ n: '*' });
    expect(Number(stored?.n)).toBe(1);
  });

  it('rolls every table back', async () => {
    await rollbackAll(database);
    for (const table of TABLES) expect(await database.schema.hasTable(table)).toBe(false);
  });
});
