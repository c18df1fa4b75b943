import type { Knex } from 'knex';
import { forEngine } from '../engine';
import { DAY_MS, dayOf, PARTITION_DAYS_AHEAD } from '../partitions';
import { createDayPartitions, createDefaultPartition } from '../postgres/partitions';

/**
 * The high-churn tables in partitions by day on PostgreSQL (docs/decisions/0080-partitions-by-time.md),
 * with `store_id` leading their keys (sharding by store):
 *
 * - `outbox_events` by `occurred_at`, key `(store_id, id, occurred_at)`;
 * - `webhook_attempts` by `attempted_at`, key `(store_id, id, attempted_at)`, `store_id` added and
 *   filled from the subscription;
 * - `idempotency_keys` by `expires_at`, key `(store_id, id, expires_at)`, `store_id` added and
 *   filled from the installation. Its unique `(installation_id, operation_id, idempotency_key)`
 *   cannot hold across partitions: an index takes its place, and a claim serialises on the key
 *   (http/idempotency.ts).
 *
 * No row is copied: the existing table becomes the partition of everything before a day two days
 * ahead, and daily partitions (and a default one) follow it. What takes time runs first, without a
 * lock that stops writes: `store_id` is filled in batches (a trigger fills the rows written
 * meanwhile), the new key's unique index is built concurrently, and a CHECK that proves the range is
 * validated. Then one short transaction renames the table, makes the partitioned one with the same
 * columns and indexes, and attaches the old table: PostgreSQL reuses its indexes and trusts the
 * CHECK, so the swap touches the catalogue only and holds its lock for milliseconds
 * (docs/deploy.md#partitions-by-time). The legacy partition is dropped whole once its range is
 * past retention, like any other.
 *
 * SQLite keeps plain tables: it gains the `store_id` columns, and the idempotency key's unique
 * index becomes a plain one, since the claim is what keeps a key to one live row on both.
 */

/** Not in one transaction: concurrent index builds cannot run in one, and each step commits on its own. */
export const config = { transaction: false };

interface Conversion {
  readonly table: string;
  readonly column: string;
  /** Where `store_id` comes from when the table has none: the table named by `via`'s id. */
  readonly storeFrom?: { readonly table: string; readonly via: string };
  /** Indexes dropped from the old table (the unique one that cannot hold across partitions). */
  readonly dropped?: readonly string[];
  /** Indexes built on the old table before the swap, so that the partitioned table has them at no cost. */
  readonly built?: readonly { readonly name: string; readonly columns: readonly string[] }[];
}

const CONVERSIONS: readonly Conversion[] = [
  { table: 'outbox_events', column: 'occurred_at' },
  { table: 'webhook_attempts', column: 'attempted_at', storeFrom: { table: 'webhook_subscriptions', via: 'subscription_id' } },
  {
    table: 'idempotency_keys',
    column: 'expires_at',
    storeFrom: { table: 'installations', via: 'installation_id' },
    dropped: ['idempotency_keys_installation_id_operation_id_idempotency_key_unique'],
    built: [{ name: 'idempotency_keys_key_index', columns: ['installation_id', 'operation_id', 'idempotency_key'] }],
  },
];

/** Rows one statement of the `store_id` backfill updates. */
const BACKFILL_BATCH = 5000;
/**
 * From about this many rows (the planner's estimate) an index is built CONCURRENTLY, which does not
 * stop writes but scans twice and waits for every transaction open on the database; below it a
 * plain build's brief write lock costs less.
 */
export const CONCURRENT_INDEX_FROM_ROWS = 100_000;

/** How long the swap waits for its lock before giving up (the next start runs the migration again). */
const SWAP_LOCK_TIMEOUT = '5s';

const legacyOf = (table: string) => `${table}_p_legacy`;
/** PostgreSQL cuts names at 63 bytes (knex's name for the unique index is longer). */
const asStored = (name: string) => name.slice(0, 63);
const keyIndexOf = (table: string) => `${table}_partition_key`;
const rangeCheckOf = (table: string) => `${table}_partition_range`;
const fillerOf = (table: string) => `${table}_fill_store_id`;

export async function up(knex: Knex): Promise<void> {
  await forEngine(knex, { postgres: upOnPostgres, sqlite: upOnSqlite })(knex);
}

export async function down(knex: Knex): Promise<void> {
  await forEngine(knex, { postgres: downOnPostgres, sqlite: downOnSqlite })(knex);
}

async function upOnPostgres(knex: Knex): Promise<void> {
  for (const conversion of CONVERSIONS) {
    // Two days ahead (the legacy table takes the inserts until the swap, idempotency keys expire a
    // day after they are made), and past any row the table holds already.
    const [{ latest }] = (await knex.raw<{ rows: [{ latest: number | null }] }>('select max(??) as latest from ??', [conversion.column, conversion.table]))
      .rows;
    const boundary = Math.max(dayOf(Date.now()) + 2 * DAY_MS, latest === null ? 0 : dayOf(Number(latest)) + DAY_MS);
    await prepareOnPostgres(knex, conversion, boundary);
    await swapOnPostgres(knex, conversion, boundary);
  }
}

/**
 * A trigger that fills `store_id` on insert when a writer left it out (an instance of the previous
 * release during a rolling deploy); it costs nothing to a writer that gives it (the WHEN clause).
 */
async function addStoreIdFiller(knex: Knex, table: string, from: { table: string; via: string }): Promise<void> {
  await knex.raw(
    `create or replace function ??() returns trigger language plpgsql as $$
     begin
       select store_id into new.store_id from ${from.table} where id = new.${from.via};
       return new;
     end $$`,
    [fillerOf(table)],
  );
  await knex.raw(`create trigger ?? before insert on ?? for each row when (new.store_id is null) execute function ??()`, [
    fillerOf(table),
    table,
    fillerOf(table),
  ]);
}

/** The slow steps, none of which stops writes: `store_id` filled, the key's index built, the range proved. */
async function prepareOnPostgres(knex: Knex, { table, column, storeFrom, built = [] }: Conversion, boundary: number): Promise<void> {
  if (storeFrom) {
    await knex.raw('alter table ?? add column if not exists store_id uuid', [table]);
    await knex.raw('drop trigger if exists ?? on ??', [fillerOf(table), table]);
    await addStoreIdFiller(knex, table, storeFrom);
    // In the primary key's order, a batch per statement: each commits, and no statement holds its row locks for long.
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const batch = (await knex.raw<{ rows: { id: string }[] }>(`select id from ?? where id > ? order by id limit ${BACKFILL_BATCH}`, [table, after])).rows;
      const last = batch.at(-1);
      if (!last) break;
      await knex.raw('update ?? t set store_id = f.store_id from ?? f where t.id > ? and t.id <= ? and t.store_id is null and f.id = t.??', [
        table,
        storeFrom.table,
        after,
        last.id,
        storeFrom.via,
      ]);
      after = last.id;
    }
    await knex.raw(`alter table ?? add constraint ?? check (store_id is not null) not valid`, [table, `${table}_store_id_present`]);
    await knex.raw('alter table ?? validate constraint ??', [table, `${table}_store_id_present`]);
    // A validated CHECK spares SET NOT NULL its scan (PostgreSQL 12 and later).
    await knex.raw('alter table ?? alter column store_id set not null', [table]);
    await knex.raw('alter table ?? drop constraint ??', [table, `${table}_store_id_present`]);
  }
  const how = (await estimatedRows(knex, table)) >= CONCURRENT_INDEX_FROM_ROWS ? 'concurrently' : '';
  await knex.raw(`create unique index ${how} if not exists ?? on ?? (store_id, id, ??)`, [keyIndexOf(table), table, column]);
  for (const index of built)
    await knex.raw(`create index ${how} if not exists ?? on ?? (${index.columns.map(() => '??').join(', ')})`, [index.name, table, ...index.columns]);
  await knex.raw(`alter table ?? add constraint ?? check (?? < ${boundary}) not valid`, [table, rangeCheckOf(table), column]);
  await knex.raw('alter table ?? validate constraint ??', [table, rangeCheckOf(table)]);
}

const estimatedRows = async (knex: Knex, table: string): Promise<number> =>
  Number((await knex.raw<{ rows: { rows: number }[] }>('select reltuples as rows from pg_class where oid = to_regclass(?)', [table])).rows[0]?.rows ?? 0);

interface IndexDefinition {
  readonly name: string;
  readonly definition: string;
  readonly primary: boolean;
}

const indexesOf = async (knex: Knex, table: string): Promise<IndexDefinition[]> =>
  (
    await knex.raw<{ rows: { name: string; definition: string; primary: boolean }[] }>(
      `select c.relname as name, pg_get_indexdef(i.indexrelid) as definition, i.indisprimary as primary
       from pg_index i join pg_class c on c.oid = i.indexrelid
       where i.indrelid = to_regclass(?) order by c.relname`,
      [table],
    )
  ).rows;

const foreignKeysOf = async (knex: Knex, table: string): Promise<{ name: string; definition: string }[]> =>
  (
    await knex.raw<{ rows: { name: string; definition: string }[] }>(
      `select conname as name, pg_get_constraintdef(oid) as definition from pg_constraint where conrelid = to_regclass(?) and contype = 'f' order by conname`,
      [table],
    )
  ).rows;

/**
 * The swap, in one transaction touching the catalogue only: the old table renamed, keyed by the
 * new key's index, and attached under a partitioned table of the same columns, indexes (attached,
 * not built, as their definitions match) and foreign keys (likewise), followed by the days ahead
 * and a default partition.
 */
async function swapOnPostgres(knex: Knex, { table, column, storeFrom, dropped = [] }: Conversion, boundary: number): Promise<void> {
  const legacy = legacyOf(table);
  await knex.transaction(async (trx) => {
    await trx.raw(`set local lock_timeout = '${SWAP_LOCK_TIMEOUT}'`);
    await trx.raw('lock table ?? in access exclusive mode', [table]);
    const indexes = (await indexesOf(trx, table)).filter(
      (index) => !index.primary && index.name !== keyIndexOf(table) && !dropped.map(asStored).includes(index.name),
    );
    const foreignKeys = await foreignKeysOf(trx, table);
    await trx.raw('alter table ?? rename to ??', [table, legacy]);
    await trx.raw('alter table ?? drop constraint ??', [legacy, `${table}_pkey`]);
    for (const name of dropped) await trx.raw('alter table ?? drop constraint if exists ??', [legacy, name]);
    await trx.raw('alter table ?? add constraint ?? primary key using index ??', [legacy, `${legacy}_pkey`, keyIndexOf(table)]);
    for (const index of indexes) await trx.raw('alter index ?? rename to ??', [index.name, `${index.name}_legacy`]);
    await trx.raw('create table ?? (like ?? including defaults) partition by range (??)', [table, legacy, column]);
    await trx.raw('alter table ?? add constraint ?? primary key (store_id, id, ??)', [table, `${table}_pkey`, column]);
    // The definitions as they were read name the table and each index as the partitioned one has them now.
    for (const index of indexes) await trx.raw(index.definition);
    for (const key of foreignKeys) await trx.raw(`alter table ?? add constraint ?? ${key.definition}`, [table, key.name]);
    await trx.raw(`alter table ?? attach partition ?? for values from (minvalue) to (${boundary})`, [table, legacy]);
    await trx.raw('alter table ?? drop constraint ??', [legacy, rangeCheckOf(table)]);
    await createDayPartitions(
      trx,
      table,
      Array.from({ length: PARTITION_DAYS_AHEAD }, (_, day) => boundary + day * DAY_MS),
    );
    await createDefaultPartition(trx, table);
    if (storeFrom) {
      await trx.raw('drop trigger ?? on ??', [fillerOf(table), legacy]);
      await addStoreIdFiller(trx, table, storeFrom);
    }
  });
}

/**
 * Back to plain tables, rows copied (a rollback is for a database a test or a failed deploy made,
 * not a large one): the partitioned table's rows into a plain one of the same columns, with the
 * indexes and keys the tables had before.
 */
async function downOnPostgres(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    for (const { table, storeFrom, dropped = [], built = [] } of [...CONVERSIONS].reverse()) {
      const indexes = (await indexesOf(trx, table)).filter((index) => !index.primary && !built.some((made) => made.name === index.name));
      const foreignKeys = await foreignKeysOf(trx, table);
      const plain = `${table}_plain`;
      await trx.raw('create table ?? (like ?? including defaults)', [plain, table]);
      await trx.raw('insert into ?? select * from ??', [plain, table]);
      await trx.raw('drop table ?? cascade', [table]);
      if (storeFrom) await trx.raw('drop function if exists ??()', [fillerOf(table)]);
      await trx.raw('alter table ?? rename to ??', [plain, table]);
      if (storeFrom) await trx.raw('alter table ?? drop column store_id', [table]);
      await trx.raw('alter table ?? add constraint ?? primary key (id)', [table, `${table}_pkey`]);
      for (const index of indexes) await trx.raw(index.definition.replace(' ON ONLY ', ' ON '));
      for (const key of foreignKeys) await trx.raw(`alter table ?? add constraint ?? ${key.definition}`, [table, key.name]);
      for (const name of dropped) await trx.raw('alter table ?? add constraint ?? unique (installation_id, operation_id, idempotency_key)', [table, name]);
    }
  });
}

const SQLITE_KEY_UNIQUE = 'idempotency_keys_installation_id_operation_id_idempotency_key_unique';

async function upOnSqlite(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_attempts', (t) => {
    t.uuid('store_id');
  });
  await knex.raw('update webhook_attempts set store_id = (select store_id from webhook_subscriptions s where s.id = webhook_attempts.subscription_id)');
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.uuid('store_id');
  });
  await knex.raw('update idempotency_keys set store_id = (select store_id from installations i where i.id = idempotency_keys.installation_id)');
  await knex.raw('drop index ??', [SQLITE_KEY_UNIQUE]);
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.index(['installation_id', 'operation_id', 'idempotency_key'], 'idempotency_keys_key_index');
  });
}

async function downOnSqlite(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropIndex(['installation_id', 'operation_id', 'idempotency_key'], 'idempotency_keys_key_index');
    t.unique(['installation_id', 'operation_id', 'idempotency_key']);
    t.dropColumn('store_id');
  });
  await knex.schema.alterTable('webhook_attempts', (t) => {
    t.dropColumn('store_id');
  });
}
