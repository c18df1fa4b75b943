import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { subscribedInstallation } from '../../../../tools/testbed/webhook-rows';
import { migrateToLatest, migrateUpTo } from '../../src/db/migrate';
import { DAY_MS } from '../../src/db/partitions';
import { observeSteps } from '../../src/db/postgres/online-ddl';
import { describeOnPostgres, postgresSchema, type TestDatabase } from '../support/databases';
import { type Cut, hold, runCutting } from '../support/migration-cuts';
import { dumpSchema } from '../support/schema-dump';

/**
 * Migrations 019 and 021 (and what runs with them) cut at each of its steps in turn, by a lock held from another
 * session, a cancelled statement and a terminated session, each run again until it completes
 * (db/postgres/online-ddl.ts, docs/decisions/0081-migrations-run-again.md): the schema is then the
 * one a clean run makes, every row is kept, and an event dated three days ahead can be recorded
 * after every cut (no CHECK of a failed run refuses it).
 */

/** Enough events that 019 builds its index concurrently (CONCURRENT_INDEX_FROM_ROWS). */
const EVENTS = 100_000;
const SMALL_TABLE_ROWS = 200;
/** A chain is some thirty runs of the migrations, each building what the cut before undid: about 20 s on a quiet machine. */
const CHAIN_MS = 180_000;

const schemaOf = async (db: Knex): Promise<string> =>
  (await db.raw<{ rows: { schema: string }[] }>('select current_schema() as schema')).rows[0]?.schema as string;

/** A database as the release before 019 left it, with rows in every table 019 converts. */
async function before019(db: Knex): Promise<{ storeId: string; subscriptionId: string }> {
  await migrateUpTo(db, '018_store_keys');
  const now = Date.now();
  const ownerId = randomUUID();
  const storeId = randomUUID();
  await db('store_owners').insert({ id: ownerId, email: `${ownerId}@example.com`, name: 'Noura', password_hash: 'scrypt$x', created_at: now });
  await db('stores').insert({ id: storeId, owner_id: ownerId, name: 'Oud House', domain: `${storeId}.example.com`, created_at: now });
  const { installationId, subscriptionId } = await subscribedInstallation(db, storeId, now);
  const ids = { store: storeId, installation: installationId, subscription: subscriptionId };
  await db.raw(
    `insert into outbox_events (id, store_id, type, payload, occurred_at, dispatched_at)
     select gen_random_uuid(), ?, 'product.created', '{}', ?::bigint - n * 1000, ?::bigint - n * 1000 from generate_series(1, ?) n`,
    [ids.store, now, now, EVENTS],
  );
  await db.raw(
    `insert into webhook_attempts (id, subscription_id, delivery_id, event_id, event_type, attempt, outcome, response_status, latency_ms, attempted_at)
     select gen_random_uuid(), ?, n, gen_random_uuid(), 'product.created', 1, 'succeeded', 200, 5, ?::bigint - n * 1000 from generate_series(1, ?) n`,
    [ids.subscription, now, SMALL_TABLE_ROWS],
  );
  await db.raw(
    `insert into idempotency_keys (id, installation_id, operation_id, idempotency_key, request_hash, state, created_at, expires_at)
     select gen_random_uuid(), ?, 'products.create', 'k-' || n, 'h', 'completed', ?::bigint, ?::bigint + n from generate_series(1, ?) n`,
    [ids.installation, now, now + DAY_MS, SMALL_TABLE_ROWS],
  );
  await db.raw(
    `insert into webhook_deliveries (store_id, subscription_id, event_id, event_type, kind, state, attempts, next_attempt_at, created_at, event_occurred_at, finished_at)
     select ?, ?, gen_random_uuid(), 'product.created', 'event', 'succeeded', 1, ?::bigint - n * 1000, ?::bigint - n * 1000, ?::bigint - n * 1000, ?::bigint
     from generate_series(1, ?) n`,
    [ids.store, ids.subscription, now, now, now, now, SMALL_TABLE_ROWS],
  );
  await db.raw('analyze');
  return { storeId: ids.store, subscriptionId: ids.subscription };
}

/**
 * Records an event dated three days ahead, and a delivery made then, as any instance may at any
 * moment (a CHECK left by a failed run would refuse them).
 */
async function recordLater(db: Knex, { storeId, subscriptionId }: { storeId: string; subscriptionId: string }): Promise<void> {
  const later = Date.now() + 3 * DAY_MS;
  await db.raw(`insert into outbox_events (id, store_id, type, payload, occurred_at) values (gen_random_uuid(), ?, 'product.created', '{}', ?)`, [
    storeId,
    later,
  ]);
  await db.raw(
    `insert into webhook_deliveries (store_id, subscription_id, event_id, event_type, kind, state, attempts, next_attempt_at, created_at, event_occurred_at)
     values (?, ?, gen_random_uuid(), 'product.created', 'event', 'pending', 0, ?, ?, ?)`,
    [storeId, subscriptionId, later, later, later],
  );
}

describeOnPostgres('migrations cut at each step', (_unused, url) => {
  let clean: string;
  const opened: TestDatabase[] = [];
  const open = async () => {
    const database = postgresSchema(url);
    opened.push(database);
    const db = await database.open();
    return { db, schema: await schemaOf(db) };
  };
  beforeAll(async () => {
    const { db, schema } = await open();
    await migrateToLatest(db);
    clean = dumpSchema(url, schema);
  }, CHAIN_MS);
  afterAll(async () => {
    for (const database of opened) await database.close();
  });

  it.each<Cut>(['lock', 'cancel', 'terminate'])(
    'are completed by the next run, to a clean run’s schema, cut by %s',
    async (cut) => {
      const { db, schema } = await open();
      const rows = await before019(db);
      const cutBefore = new Set<string>();
      const cuts: string[] = [];
      for (let run = 0; run < 80; run += 1) {
        const result = await runCutting({ url, schema, cut, cutBefore }, () => migrateToLatest(db, { contract: true }));
        if (result.cut === undefined) {
          expect(result.error).toBeUndefined();
          break;
        }
        cuts.push(result.cut);
        // Every cut fails its run, and leaves nothing that refuses an event (or a delivery) dated past the run's day.
        expect({ cut: result.cut, failed: result.error !== undefined }).toEqual({ cut: result.cut, failed: true });
        await expect(recordLater(db, rows)).resolves.toBeUndefined();
      }
      const expected = [
        'outbox_events: add the range proof',
        'outbox_events: swap in the partitioned table',
        'webhook_attempts: add store_id',
        'webhook_attempts: make store_id not null',
        'webhook_attempts: swap in the partitioned table',
        'idempotency_keys: add the store_id filler',
        'idempotency_keys: swap in the partitioned table',
      ];
      if (cut !== 'lock')
        expected.push(
          'outbox_events: build the index outbox_events_partition_key',
          'outbox_events: validate the range proof',
          'outbox_events: drop the invalid index outbox_events_partition_key',
          'webhook_attempts: fill store_id',
        );
      expect(cuts).toEqual(expect.arrayContaining(expected));
      expect(dumpSchema(url, schema)).toEqual(clean);
      expect(Number((await db('outbox_events').count({ n: '*' }))[0]?.n)).toBe(EVENTS + cuts.length);
      expect(Number((await db('webhook_attempts').whereNotNull('store_id').count({ n: '*' }))[0]?.n)).toBe(SMALL_TABLE_ROWS);
      await expect(recordLater(db, rows)).resolves.toBeUndefined();
    },
    CHAIN_MS,
  );

  it(
    'waits out a lock held for a moment: the short step is tried again and the run completes',
    async () => {
      const { db, schema } = await open();
      await before019(db);
      const swap = 'swap in the partitioned table';
      const seen: string[] = [];
      let released: Promise<void> | undefined;
      const stop = observeSteps(
        async (start) => {
          if (start.table !== 'outbox_events' || start.step !== swap) return;
          seen.push(start.step);
          if (released) return;
          const release = await hold(url, schema, start);
          released = new Promise((resolve) => setTimeout(resolve, 400)).then(release);
        },
        { lockTimeoutMs: 200, attempts: 4, backoffMs: 100 },
      );
      try {
        await migrateToLatest(db, { contract: true });
      } finally {
        stop();
        await released;
      }
      // The first try's lock timed out; a later one found the lock free.
      expect(seen.length).toBeGreaterThanOrEqual(2);
      expect(dumpSchema(url, schema)).toEqual(clean);
    },
    CHAIN_MS,
  );
});
