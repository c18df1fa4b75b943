import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../packages/server/src/core/clock';
import { uuidV7 } from '../../packages/server/src/core/ids';
import { engineOfHandle } from '../../packages/server/src/db/engine';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { DAY_MS, dayOf } from '../../packages/server/src/db/partitions';
import { EXPIRY_RULES } from '../../packages/server/src/jobs/housekeeping';
import { deleteExpired, type ExpiryRule, partitionedTables } from '../../packages/server/src/services/housekeeping';
import { subscribedInstallation } from '../testbed/webhook-rows';
import { createBenchStore, type Knex, scratchSchema } from './fixtures';
import { fixed, printTable, runScript } from './report';
import { partitionSettings } from './settings';
import { walBytesSince, walPosition } from './wal';

/**
 * `pnpm bench:partitions` (docs/decisions/0080-partitions-by-time.md): fills simulated days of
 * outbox events, webhook deliveries and attempts and idempotency keys on PostgreSQL, one day at a time, with the
 * housekeeping upkeep at each day's end, then expires one day both ways, a partition dropped whole
 * against the same rows deleted by the row sweep, and prints the time and WAL of each, and the
 * tables' sizes by day: they grow until the first day passes retention (30 days), then stay flat.
 */

const TABLES = partitionedTables(EXPIRY_RULES);
const PARTITIONED = new Set(TABLES.map((table) => table.table));
/** The row sweep alone: the same rules with no partitions, as on SQLite. */
const ROW_RULES: ExpiryRule[] = EXPIRY_RULES.filter((rule) => PARTITIONED.has(rule.table)).map(({ partitions: _, ...rule }) => rule);
const INSERT_CHUNK = 500;
/** About what each row carries in production: an event's envelope, a stored answer. */
const PAYLOAD = JSON.stringify({ data: { name: 'Oud Royal', description: 'x'.repeat(400) } });

interface Fixture {
  readonly storeId: string;
  readonly installationId: string;
  readonly subscriptionId: string;
}

async function fixture(db: Knex, now: number): Promise<Fixture> {
  const { store } = await createBenchStore({ db, engine: engineOfHandle(db), clock: new ManualClock(now) }, 'Partitions bench');
  const { installationId, subscriptionId } = await subscribedInstallation(db, store.id, now);
  return { storeId: store.id, installationId, subscriptionId };
}

async function insertChunked(db: Knex, table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) await db(table).insert(rows.slice(start, start + INSERT_CHUNK));
}

/** One day's rows of each table, spread over the day: events fanned out, a delivery and an attempt each, an idempotency key each. */
async function fillDay(db: Knex, { storeId, installationId, subscriptionId }: Fixture, day: number, rows: number): Promise<void> {
  const times = Array.from({ length: rows }, (_, index) => day + Math.floor((index * DAY_MS) / rows));
  await insertChunked(
    db,
    'outbox_events',
    times.map((at) => ({ id: uuidV7(at), store_id: storeId, type: 'product.created', payload: PAYLOAD, occurred_at: at, dispatched_at: at })),
  );
  // Each attempt names its delivery, as the attempts' expiry rule reads it.
  const deliveryIds: number[] = [];
  const deliveries = times.map((at) => ({
    store_id: storeId,
    subscription_id: subscriptionId,
    event_id: uuidV7(at),
    event_type: 'product.created',
    kind: 'event',
    state: 'succeeded',
    attempts: 1,
    next_attempt_at: at,
    created_at: at,
    event_occurred_at: at,
    finished_at: at,
  }));
  for (let start = 0; start < deliveries.length; start += INSERT_CHUNK) {
    const made = await db('webhook_deliveries')
      .insert(deliveries.slice(start, start + INSERT_CHUNK))
      .returning('id');
    deliveryIds.push(...made.map((row: { id: number }) => Number(row.id)));
  }
  await insertChunked(
    db,
    'webhook_attempts',
    times.map((at, index) => ({
      id: randomUUID(),
      store_id: storeId,
      subscription_id: subscriptionId,
      delivery_id: deliveryIds[index],
      event_id: randomUUID(),
      event_type: 'product.created',
      attempt: 1,
      outcome: 'succeeded',
      response_status: 200,
      latency_ms: 20,
      attempted_at: at,
    })),
  );
  await insertChunked(
    db,
    'idempotency_keys',
    times.map((at) => ({
      id: randomUUID(),
      store_id: storeId,
      installation_id: installationId,
      operation_id: 'products.create',
      idempotency_key: randomUUID(),
      request_hash: 'h'.repeat(64),
      state: 'completed',
      response_status: 201,
      response_headers: '{}',
      response_body: PAYLOAD,
      created_at: at,
      expires_at: at + DAY_MS,
    })),
  );
}

/** Each partitioned table's size, its partitions' tables and indexes together, in MB. */
async function sizesMb(db: Knex): Promise<number[]> {
  const sizes: number[] = [];
  for (const { table } of TABLES) {
    const { rows } = await db.raw<{ rows: { bytes: number | null }[] }>(
      'select sum(pg_total_relation_size(inhrelid)) as bytes from pg_inherits where inhparent = to_regclass(?)',
      [table],
    );
    sizes.push(Number(rows[0]?.bytes ?? 0) / 1024 / 1024);
  }
  return sizes;
}

interface Expiry {
  readonly way: string;
  readonly rows: number;
  readonly seconds: number;
  readonly walBytes: number;
}

const rowsNow = async (db: Knex): Promise<number> => {
  let rows = 0;
  for (const { table } of TABLES) {
    const [row] = await db(table).count({ n: '*' });
    rows += Number(row?.n ?? 0);
  }
  return rows;
};

/** The time and WAL of `work`, which expires a day's rows, and how many rows went. */
async function expiryOf(db: Knex, way: string, work: () => Promise<unknown>): Promise<Expiry> {
  const before = await rowsNow(db);
  await db.raw('checkpoint'); // both ways start after a checkpoint: their first changes to a page write it whole alike
  const wal = await walPosition(db);
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const walBytes = await walBytesSince(db, wal);
  return { way, rows: before - (await rowsNow(db)), seconds, walBytes };
}

async function main(): Promise<void> {
  const settings = partitionSettings();
  const scratch = await scratchSchema(settings.databaseUrl, 'bench_partitions');
  const { db } = scratch;
  try {
    const first = dayOf(Date.now()) + 3 * DAY_MS; // past the partition the migration leaves to the table as it was
    const endOf = (index: number) => first + (index + 1) * DAY_MS - 1;
    await migrateToLatest(db);
    await engineOfHandle(db).partitions.keep(db, TABLES, first);
    const owner = await fixture(db, first);
    console.log(
      `Filling ${settings.days} days of ${settings.rowsPerDay} events, deliveries, attempts and idempotency keys each, with the upkeep at each day's end`,
    );
    const sizes: string[][] = [];
    const expiries: Expiry[] = [];
    // Retention is 30 days: the first day the outbox's and attempts' oldest day passes it, it is
    // expired by the row sweep (timed), the next day by a partition dropped (timed), and by the
    // upkeep as usual after that.
    const rowDeleteDay = 30;
    for (let index = 0; index < settings.days; index += 1) {
      const day = first + index * DAY_MS;
      await fillDay(db, owner, day, settings.rowsPerDay);
      const now = endOf(index);
      if (index === rowDeleteDay) {
        expiries.push(
          await expiryOf(db, 'row DELETE (the sweep, batches of 1,000)', () =>
            deleteExpired({ db, engine: engineOfHandle(db), clock: new ManualClock(now) }, ROW_RULES),
          ),
        );
      } else if (index === rowDeleteDay + 1) {
        expiries.push(await expiryOf(db, 'partition DROP (the upkeep)', () => engineOfHandle(db).partitions.keep(db, TABLES, now)));
      }
      await engineOfHandle(db).partitions.keep(db, TABLES, now);
      if (index % 3 === 2 || index === settings.days - 1) sizes.push([String(index + 1), ...(await sizesMb(db)).map((mb) => fixed(mb, 1))]);
    }
    console.log('\nExpiring one day of outbox_events, webhook_deliveries and webhook_attempts (and the idempotency keys due then)');
    printTable(
      [
        { title: 'way', align: 'left' },
        { title: 'rows', align: 'right' },
        { title: 'seconds', align: 'right' },
        { title: 'WAL bytes', align: 'right' },
      ],
      expiries.map((expiry) => [expiry.way, String(expiry.rows), fixed(expiry.seconds, 3), String(expiry.walBytes)]),
    );
    console.log('\nThe tables by day, MB (partitions, tables and indexes)');
    printTable([{ title: 'day', align: 'right' }, ...TABLES.map(({ table }) => ({ title: table, align: 'right' as const }))], sizes);
  } finally {
    await db.destroy();
    await scratch.drop();
  }
}

runScript(main, 'bench:partitions: ');
