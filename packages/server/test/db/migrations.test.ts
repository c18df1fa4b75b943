import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { subscribedInstallation } from '../../../../tools/testbed/webhook-rows';
import { migrateToLatest, migrateUpTo, rollbackAll, rollbackLatest } from '../../src/db/migrate';
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

const attemptRow = (subscriptionId: string, at: number) => ({
  id: randomUUID(),
  subscription_id: subscriptionId,
  delivery_id: 1,
  event_id: randomUUID(),
  event_type: 'product.created',
  attempt: 1,
  outcome: 'succeeded',
  response_status: 200,
  latency_ms: 5,
  attempted_at: at,
});

/** Rows of every table 019 changes, as the release before it wrote them; answers the subscription's id. */
async function rowsBefore019(database: Knex, storeId: string, installationId: string, now: number): Promise<string> {
  const { subscriptionId } = await subscribedInstallation(database, storeId, now, { installationId });
  for (const at of [now - 1000, now]) {
    await database('outbox_events').insert({ id: randomUUID(), store_id: storeId, type: 'product.created', payload: '{}', occurred_at: at });
  }
  await database('webhook_attempts').insert(attemptRow(subscriptionId, now));
  await database('idempotency_keys').insert({
    id: randomUUID(),
    installation_id: installationId,
    operation_id: 'products.create',
    idempotency_key: 'k-1',
    request_hash: 'h',
    state: 'completed',
    created_at: now,
    expires_at: now + 24 * 60 * 60 * 1000,
  });
  return subscriptionId;
}

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
      '019_partitions',
      '020_read_positions',
      '021_delivery_partitions',
      // A database with no migrations yet runs the contract phase at once: no previous release can run on it.
      '018_store_keys (contract)',
      '019_partitions (contract)',
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

  it('019 keeps the rows of a database that has them, fills store_id, and partitions the tables on PostgreSQL', async () => {
    await rollbackLatest(database); // 021
    await rollbackLatest(database); // 020
    await rollbackLatest(database); // 019's contract phase
    await rollbackLatest(database); // 019
    const storeId = (await database('stores').first('id')).id as string;
    const installation = { id: randomUUID(), store_id: storeId };
    const now = Date.now();
    const subscriptionId = await rowsBefore019(database, storeId, installation.id, now);
    expect(await migrateToLatest(database, { contract: true })).toEqual([
      '019_partitions',
      '020_read_positions',
      '021_delivery_partitions',
      '019_partitions (contract)',
    ]);

    expect(Number((await database('outbox_events').where({ store_id: storeId }).count({ n: '*' }))[0]?.n)).toBe(2);
    expect(await database('webhook_attempts').where({ subscription_id: subscriptionId }).select('store_id')).toEqual([{ store_id: storeId }]);
    expect(await database('idempotency_keys').where({ idempotency_key: 'k-1' }).select('store_id')).toEqual([{ store_id: storeId }]);
    if (testDatabase.name === 'postgres') {
      // The old rows are the legacy partition's; a row of a later day lands in that day's partition.
      const where = async (table: string) =>
        (await database.raw<{ rows: { partition: string }[] }>('select distinct tableoid::regclass::text as partition from ??', [table])).rows.map(
          (row) => row.partition,
        );
      expect(await where('outbox_events')).toEqual([expect.stringMatching(/outbox_events_p_legacy$/)]);
      expect(await where('webhook_attempts')).toEqual([expect.stringMatching(/webhook_attempts_p_legacy$/)]);
      const later = now + 3 * 24 * 60 * 60 * 1000;
      await database('outbox_events').insert({ id: randomUUID(), store_id: storeId, type: 'product.created', payload: '{}', occurred_at: later });
      const day = new Date(later).toISOString().slice(0, 10).replace(/-/g, '');
      expect(await where('outbox_events')).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`outbox_events_p${day}$`))]));
      const key = await database.raw<{ rows: { definition: string }[] }>(
        "select pg_get_constraintdef(oid) as definition from pg_constraint where conrelid = to_regclass('outbox_events') and contype = 'p'",
      );
      expect(key.rows[0]?.definition).toBe('PRIMARY KEY (store_id, id, occurred_at)');
      // A writer of the previous release, which gives no store_id, still writes: the trigger fills it.
      await database('webhook_attempts').insert({ ...attemptRow(subscriptionId, now), id: randomUUID() });
      expect(Number((await database('webhook_attempts').whereNull('store_id').count({ n: '*' }))[0]?.n)).toBe(0);
    }

    await rollbackLatest(database); // 021
    await rollbackLatest(database); // 020
    await rollbackLatest(database); // 019's contract phase
    await rollbackLatest(database); // 019
    expect(Number((await database('outbox_events').where({ store_id: storeId }).count({ n: '*' }))[0]?.n)).toBeGreaterThanOrEqual(2);
    expect(await database.schema.hasColumn('webhook_attempts', 'store_id')).toBe(false);
    expect(await database('idempotency_keys').where({ idempotency_key: 'k-1' }).select('state')).toEqual([{ state: 'completed' }]);
    expect(await migrateToLatest(database, { contract: true })).toEqual([
      '019_partitions',
      '020_read_positions',
      '021_delivery_partitions',
      '019_partitions (contract)',
    ]);
    // Gone again, so that the last test rolls back an empty schema.
    for (const table of ['webhook_attempts', 'idempotency_keys', 'outbox_events', 'webhook_subscriptions', 'installations', 'app_versions', 'apps'])
      await database(table).delete();
  });

  it('rolls every table back', async () => {
    await rollbackAll(database);
    for (const table of TABLES) expect(await database.schema.hasTable(table)).toBe(false);
  });
});

describe.each(testDatabases())('a migration cut half-way on $name', (testDatabase) => {
  let database: Knex;
  beforeAll(async () => {
    database = await testDatabase.open();
  });
  afterAll(() => testDatabase.close());

  it('is completed by the next run; a run killed while it held knex’s lock leaves that lock to the next', async () => {
    await migrateUpTo(database, '018_store_keys');
    // A run killed while it held knex's lock (a migration outside a transaction commits as it goes).
    await database.migrate.list({ tableName: 'svc_migrations' }).catch(() => undefined);
    await database('svc_migrations_lock').update({ is_locked: 1 });
    if (testDatabase.name === 'sqlite') {
      // SQLite: 019 fails at its second column (made beforehand here); its first is undone with it.
      await database.schema.alterTable('idempotency_keys', (t) => {
        t.uuid('store_id');
      });
      await database('svc_migrations_lock').update({ is_locked: 0 }); // SQLite's lock is its transaction's: a killed run leaves none
      // What the run ended with, whatever it is, so that a failure says it.
      const outcome = await migrateToLatest(database).then(
        (applied) => ({ applied }),
        (error: unknown) => ({ error: error instanceof Error ? error.message : `${typeof error}: ${String(error)}` }),
      );
      expect(outcome).toEqual({ error: expect.stringContaining('duplicate column name: store_id') });
      expect(await database.schema.hasColumn('webhook_attempts', 'store_id')).toBe(false);
      expect(await database('svc_migrations_lock').first('is_locked')).toEqual({ is_locked: 0 });
      await database.schema.alterTable('idempotency_keys', (t) => {
        t.dropColumn('store_id');
      });
    }
    // SQLite runs the contract phases at once: no previous release runs beside its one server.
    const contracts = testDatabase.name === 'sqlite' ? ['018_store_keys (contract)', '019_partitions (contract)'] : [];
    expect(await migrateToLatest(database)).toEqual(['019_partitions', '020_read_positions', '021_delivery_partitions', ...contracts]);
    expect(await database.schema.hasColumn('webhook_attempts', 'store_id')).toBe(true);
  });
});
