import type { Knex } from 'knex';
import { DAY_MS, dayOf, PARTITION_DAYS_AHEAD } from '../partitions';
import { DdlSession, ensureIndex, hasConstraint, type IndexSpec, isNotNull, relationKind } from './online-ddl';
import { createDayPartitions, createDefaultPartition } from './partitions';

/**
 * A plain table made partitioned by day on PostgreSQL without copying a row and without stopping
 * its writers for more than a moment (migrations 019 and 021; docs/decisions/0080-partitions-by-time.md,
 * 0081-migrations-run-again.md). The existing table becomes the partition of everything before a
 * boundary a day or more ahead (`<table>_p_legacy`), and daily partitions and a default one follow.
 *
 * What takes time runs first, on the migration's own session, without a lock that stops writes:
 * `store_id` filled in batches (a trigger fills the rows written meanwhile), the new key's unique
 * index built (concurrently on a large table), and a CHECK that proves the legacy range validated.
 * Then one short transaction renames the table, makes the partitioned one with the same columns,
 * indexes, foreign keys and triggers, and attaches the old table: PostgreSQL reuses its indexes and
 * trusts the CHECK, so the swap touches the catalogue only.
 *
 * Every step can be cut and is done again by the next run from what it finds: a table already
 * partitioned is left as it is; a column, trigger, index or constraint already there is kept (an
 * INVALID index is built again). The range CHECK is the one thing whose meaning depends on the day
 * of the run (it refuses rows dated past the boundary): it is dropped when a run fails and at the
 * start of every run, so it never outlives the run that made it by more than a killed process's
 * restart.
 */

export interface DayPartitioning {
  readonly table: string;
  /** The partition key: epoch milliseconds, never null. */
  readonly column: string;
  /** Where `store_id` comes from when the table has none yet: the row of `table` whose id is `via`. */
  readonly storeFrom?: { readonly table: string; readonly via: string };
  /** Unique constraints of the old table that cannot hold across partitions (their columns lack the partition key). */
  readonly dropped?: readonly string[];
  /** Indexes built on the old table before the swap, so that the partitioned table has them at no cost. */
  readonly built?: readonly IndexSpec[];
  /** The primary key's columns before the conversion (what a rollback restores). */
  readonly keyBefore?: readonly string[];
}

/** Rows one statement of the `store_id` backfill updates. */
const BACKFILL_BATCH = 5000;

export const legacyOf = (table: string) => `${table}_p_legacy`;
/** PostgreSQL cuts names at 63 bytes (knex's names for unique constraints can be longer). */
const asStored = (name: string) => name.slice(0, 63);
const keyIndexOf = (table: string) => `${table}_partition_key`;
export const rangeCheckOf = (table: string) => `${table}_partition_range`;
const storePresentOf = (table: string) => `${table}_store_id_present`;
export const fillerOf = (table: string) => `${table}_fill_store_id`;

/** Partitions `conversion.table` by day, completing whatever an earlier run of it left. */
export async function partitionByDay(pool: Knex, conversion: DayPartitioning): Promise<void> {
  const session = DdlSession.open(pool, conversion.table);
  try {
    await convert(session, conversion);
  } catch (error) {
    await dropRangeProof(pool, conversion.table).catch(() => undefined); // the next run drops it first in any case
    throw error;
  } finally {
    await session.close();
  }
}

/** The day-dependent CHECK gone, on a session of its own (the failed run's may be the one that was lost). */
async function dropRangeProof(pool: Knex, table: string): Promise<void> {
  const session = DdlSession.open(pool, table);
  try {
    await session.step('drop the range proof of a failed run', 'short', (db) =>
      db.raw('alter table ?? drop constraint if exists ??', [table, rangeCheckOf(table)]),
    );
  } finally {
    await session.close();
  }
}

async function convert(session: DdlSession, conversion: DayPartitioning): Promise<void> {
  const { table } = conversion;
  if ((await relationKind(session.db, table)) === 'p') return;
  if (await hasConstraint(session.db, table, rangeCheckOf(table)))
    await session.step('drop the range proof of an earlier run', 'short', (db) =>
      db.raw('alter table ?? drop constraint if exists ??', [table, rangeCheckOf(table)]),
    );
  if (conversion.storeFrom) await fillStoreId(session, table, conversion.storeFrom);
  await ensureIndex(session, table, { name: keyIndexOf(table), columns: ['store_id', 'id', conversion.column], unique: true });
  for (const index of conversion.built ?? []) await ensureIndex(session, table, index);
  const boundary = await boundaryOf(session.db, conversion);
  await session.step('add the range proof', 'short', (db) =>
    db.raw(`alter table ?? add constraint ?? check (?? < ${boundary}) not valid`, [table, rangeCheckOf(table), conversion.column]),
  );
  await session.step('validate the range proof', 'long', (db) => db.raw('alter table ?? validate constraint ??', [table, rangeCheckOf(table)]));
  await session.step('swap in the partitioned table', 'short', (db) => db.transaction((trx) => swap(trx, conversion, boundary)));
}

/**
 * Two days ahead (the legacy table takes the inserts until the swap, idempotency keys expire a day
 * after they are made), and past any row the table holds already.
 */
async function boundaryOf(db: Knex, { table, column }: DayPartitioning): Promise<number> {
  const { rows } = await db.raw<{ rows: [{ latest: number | null }] }>('select max(??) as latest from ??', [column, table]);
  const latest = rows[0].latest;
  return Math.max(dayOf(Date.now()) + 2 * DAY_MS, latest === null ? 0 : dayOf(Number(latest)) + DAY_MS);
}

/**
 * `store_id` added, filled and made NOT NULL, re-entrantly: a trigger fills it on insert when a
 * writer leaves it out (an instance of the previous release during a rolling deploy; its WHEN
 * clause spares a writer that gives it), the rows already there are filled in batches, and a
 * validated CHECK spares SET NOT NULL its scan. Nothing to do once the column is NOT NULL.
 */
export async function fillStoreId(session: DdlSession, table: string, from: { table: string; via: string }): Promise<void> {
  if (await isNotNull(session.db, table, 'store_id')) return;
  await session.step('add store_id', 'short', (db) => db.raw('alter table ?? add column if not exists store_id uuid', [table]));
  await session.step('add the store_id filler', 'short', (db) => db.transaction((trx) => addStoreIdFiller(trx, table, from)));
  await session.step('fill store_id', 'long', async (db) => {
    // In the primary key's order, a batch per statement: each commits, and no statement holds its row locks for long.
    let after: string | number | undefined;
    for (;;) {
      const batch = (
        await db.raw<{ rows: { id: string | number }[] }>(
          `select id from ?? where store_id is null ${after === undefined ? '' : 'and id > ?'} order by id limit ${BACKFILL_BATCH}`,
          after === undefined ? [table] : [table, after],
        )
      ).rows;
      const last = batch.at(-1);
      if (!last) return;
      await db.raw(`update ?? t set store_id = f.store_id from ?? f where t.id = any(?) and t.store_id is null and f.id = t.??`, [
        table,
        from.table,
        batch.map((row) => String(row.id)),
        from.via,
      ]);
      after = last.id;
    }
  });
  await session.step('add the store_id check', 'short', (db) =>
    db.raw(`alter table ?? drop constraint if exists ??, add constraint ?? check (store_id is not null) not valid`, [
      table,
      storePresentOf(table),
      storePresentOf(table),
    ]),
  );
  await session.step('validate the store_id check', 'long', (db) => db.raw('alter table ?? validate constraint ??', [table, storePresentOf(table)]));
  // A validated CHECK spares SET NOT NULL its scan (PostgreSQL 12 and later); it goes in the same statement.
  await session.step('make store_id not null', 'short', (db) =>
    db.raw('alter table ?? alter column store_id set not null, drop constraint ??', [table, storePresentOf(table)]),
  );
}

/** The trigger that fills `store_id` on insert when a writer left it out (as it is made, replaced if an earlier run made it). */
export async function addStoreIdFiller(db: Knex, table: string, from: { table: string; via: string }): Promise<void> {
  await db.raw(
    `create or replace function ??() returns trigger language plpgsql as $$
     begin
       select store_id into new.store_id from ${from.table} where id = new.${from.via};
       return new;
     end $$`,
    [fillerOf(table)],
  );
  await db.raw('drop trigger if exists ?? on ??', [fillerOf(table), table]);
  await db.raw(`create trigger ?? before insert on ?? for each row when (new.store_id is null) execute function ??()`, [
    fillerOf(table),
    table,
    fillerOf(table),
  ]);
}

interface Definition {
  readonly name: string;
  readonly definition: string;
}

const definitionsOf = async (db: Knex, sql: string, table: string): Promise<Definition[]> => (await db.raw<{ rows: Definition[] }>(sql, [table])).rows;

/** The table's indexes other than its primary key's (the definitions name the table as it is called now). */
const indexesOf = (db: Knex, table: string) =>
  definitionsOf(
    db,
    `select c.relname as name, pg_get_indexdef(i.indexrelid) as definition
     from pg_index i join pg_class c on c.oid = i.indexrelid
     where i.indrelid = to_regclass(?) and not i.indisprimary order by c.relname`,
    table,
  );

const foreignKeysOf = (db: Knex, table: string) =>
  definitionsOf(
    db,
    `select conname as name, pg_get_constraintdef(oid) as definition from pg_constraint where conrelid = to_regclass(?) and contype = 'f' order by conname`,
    table,
  );

/** Triggers the table's writers rely on (the `store_id` filler), not the ones PostgreSQL makes for constraints. */
const triggersOf = (db: Knex, table: string) =>
  definitionsOf(
    db,
    'select tgname as name, pg_get_triggerdef(oid) as definition from pg_trigger where tgrelid = to_regclass(?) and not tgisinternal order by tgname',
    table,
  );

/** Sequences owned by the table's columns (a `bigIncrements` id): they move to the partitioned table, so that dropping the legacy partition keeps them. */
const ownedSequencesOf = async (db: Knex, table: string): Promise<{ sequence: string; column: string }[]> =>
  (
    await db.raw<{ rows: { sequence: string; column: string }[] }>(
      `select s.relname as sequence, a.attname as column
       from pg_depend d join pg_class s on s.oid = d.objid and s.relkind = 'S'
       join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
       where d.refobjid = to_regclass(?) and d.deptype = 'a' order by s.relname`,
      [table],
    )
  ).rows;

/**
 * The swap, in one transaction touching the catalogue only: the old table renamed, keyed by the
 * new key's index, and attached under a partitioned table of the same columns, indexes (attached,
 * not built, as their definitions match), foreign keys (likewise) and triggers, followed by the days
 * ahead and a default partition. All or nothing: a cut swap leaves the table as it was.
 */
async function swap(trx: Knex.Transaction, { table, column, dropped = [] }: DayPartitioning, boundary: number): Promise<void> {
  const legacy = legacyOf(table);
  await trx.raw('lock table ?? in access exclusive mode', [table]);
  const indexes = (await indexesOf(trx, table)).filter((index) => index.name !== keyIndexOf(table) && !dropped.map(asStored).includes(index.name));
  const foreignKeys = await foreignKeysOf(trx, table);
  const triggers = await triggersOf(trx, table);
  const sequences = await ownedSequencesOf(trx, table);
  await trx.raw('alter table ?? rename to ??', [table, legacy]);
  await trx.raw('alter table ?? drop constraint ??', [legacy, `${table}_pkey`]);
  for (const name of dropped) await trx.raw('alter table ?? drop constraint if exists ??', [legacy, asStored(name)]);
  await trx.raw('alter table ?? add constraint ?? primary key using index ??', [legacy, `${legacy}_pkey`, keyIndexOf(table)]);
  for (const index of indexes) await trx.raw('alter index ?? rename to ??', [index.name, `${index.name}_legacy`]);
  for (const trigger of triggers) await trx.raw('drop trigger ?? on ??', [trigger.name, legacy]);
  await trx.raw('create table ?? (like ?? including defaults) partition by range (??)', [table, legacy, column]);
  await trx.raw('alter table ?? add constraint ?? primary key (store_id, id, ??)', [table, `${table}_pkey`, column]);
  for (const { sequence, column: owner } of sequences) await trx.raw('alter sequence ?? owned by ??.??', [sequence, table, owner]);
  // The definitions as they were read name the table and each index as the partitioned one has them now.
  for (const index of indexes) await trx.raw(index.definition);
  for (const key of foreignKeys) await trx.raw(`alter table ?? add constraint ?? ${key.definition}`, [table, key.name]);
  for (const trigger of triggers) await trx.raw(trigger.definition);
  await trx.raw(`alter table ?? attach partition ?? for values from (minvalue) to (${boundary})`, [table, legacy]);
  await trx.raw('alter table ?? drop constraint ??', [legacy, rangeCheckOf(table)]);
  await createDayPartitions(
    trx,
    table,
    Array.from({ length: PARTITION_DAYS_AHEAD }, (_, day) => boundary + day * DAY_MS),
  );
  await createDefaultPartition(trx, table);
}

/**
 * Back to a plain table, rows copied (a rollback is for a database a test or a failed deploy made,
 * not a large one), with the indexes, keys and triggers the partitioned table had, less the `built`
 * indexes, and the `dropped` unique constraints restored by `restore`.
 */
export async function unpartition(
  trx: Knex.Transaction,
  { table, built = [], keyBefore = ['store_id', 'id'] }: DayPartitioning,
  restore?: (trx: Knex.Transaction) => Promise<void>,
): Promise<void> {
  if ((await relationKind(trx, table)) !== 'p') return;
  const indexes = (await indexesOf(trx, table)).filter((index) => !built.some((made) => made.name === index.name));
  const foreignKeys = await foreignKeysOf(trx, table);
  const triggers = await triggersOf(trx, table);
  const sequences = await ownedSequencesOf(trx, table);
  const plain = `${table}_plain`;
  await trx.raw('create table ?? (like ?? including defaults)', [plain, table]);
  await trx.raw('insert into ?? select * from ??', [plain, table]);
  for (const { sequence, column } of sequences) await trx.raw('alter sequence ?? owned by ??.??', [sequence, plain, column]);
  await trx.raw('drop table ?? cascade', [table]);
  await trx.raw('alter table ?? rename to ??', [plain, table]);
  await trx.raw(`alter table ?? add constraint ?? primary key (${keyBefore.map(() => '??').join(', ')})`, [table, `${table}_pkey`, ...keyBefore]);
  for (const index of indexes) await trx.raw(index.definition.replace(' ON ONLY ', ' ON '));
  for (const key of foreignKeys) await trx.raw(`alter table ?? add constraint ?? ${key.definition}`, [table, key.name]);
  for (const trigger of triggers) await trx.raw(trigger.definition);
  await restore?.(trx);
}
