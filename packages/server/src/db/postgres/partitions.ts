import type { Knex } from 'knex';
import { DAY_MS, dayOf, PARTITION_DAYS_AHEAD, type PartitionUpkeep, type TimePartitions } from '../partitions';

/**
 * PostgreSQL's partitions by day (db/partitions.ts): named `<table>_p<yyyymmdd>` for the UTC day
 * they hold, `<table>_p_legacy` for the table as it was before migration 019 (everything before its
 * upper bound) and `<table>_p_default` for a row no day's partition holds yet, so that an insert
 * never fails.
 */

/** How long partition upkeep waits for a table's lock: a busy table is left for the next run rather than queueing its requests behind the DDL. */
const UPKEEP_LOCK_TIMEOUT = '2s';

/**
 * lock_not_available (lock_timeout), check_violation (rows of the range already in the default
 * partition), and deadlock_detected (a writer holding the table while waiting for the partition the
 * upkeep locked: PostgreSQL ends one of the two, the upkeep's next run tries again).
 */
const DEFERRED_CODES = new Set(['55P03', '23514', '40P01']);

export interface PartitionRange {
  readonly name: string;
  /** Inclusive; -Infinity for MINVALUE. Undefined for the default partition. */
  readonly from?: number;
  /** Exclusive. */
  readonly to?: number;
}

const dayName = (table: string, day: number) => `${table}_p${new Date(day).toISOString().slice(0, 10).replace(/-/g, '')}`;

/** A bound as `pg_get_expr` prints it: `MINVALUE`, `MAXVALUE` or `'1795305600000'`. */
function boundValue(text: string): number {
  if (text === 'MINVALUE') return Number.NEGATIVE_INFINITY;
  if (text === 'MAXVALUE') return Number.POSITIVE_INFINITY;
  return Number(text.replace(/'/g, ''));
}

/** The table's partitions with their ranges (none for a table that is not partitioned). */
export async function partitionsOf(db: Knex, table: string): Promise<PartitionRange[]> {
  const { rows } = await db.raw<{ rows: { name: string; bound: string }[] }>(
    `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
     from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = to_regclass(?) order by c.relname`,
    [table],
  );
  return rows.map(({ name, bound }) => {
    const range = /FROM \((.+)\) TO \((.+)\)/.exec(bound);
    return range ? { name, from: boundValue(range[1] as string), to: boundValue(range[2] as string) } : { name };
  });
}

const integer = (value: number): string => {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${value} is no partition bound`);
  return String(value);
};

/** One partition per UTC day starting at each of `days` (42P07 when one exists: the upkeep's `createDay` takes that as made by another leader). */
export async function createDayPartitions(db: Knex, table: string, days: readonly number[]): Promise<string[]> {
  const made: string[] = [];
  for (const day of days) {
    const name = dayName(table, day);
    await db.raw(`create table ?? partition of ?? for values from (${integer(day)}) to (${integer(day + DAY_MS)})`, [name, table]);
    made.push(name);
  }
  return made;
}

export async function createDefaultPartition(db: Knex, table: string): Promise<void> {
  await db.raw('create table if not exists ?? partition of ?? default', [`${table}_p_default`, table]);
}

const codeOf = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : undefined;

const isDeferrable = (error: unknown): boolean => DEFERRED_CODES.has(codeOf(error) ?? '');

/** Runs one DDL statement in a transaction that gives up on its lock after a moment; false when it was deferred. */
async function briefly(db: Knex, work: (trx: Knex.Transaction) => Promise<unknown>): Promise<boolean> {
  try {
    await db.transaction(async (trx) => {
      await trx.raw(`set local lock_timeout = '${UPKEEP_LOCK_TIMEOUT}'`);
      await work(trx);
    });
    return true;
  } catch (error) {
    if (isDeferrable(error)) return false;
    throw error;
  }
}

/** The days from today to `PARTITION_DAYS_AHEAD` ahead that no partition holds yet. */
export function missingDays(partitions: readonly PartitionRange[], now: number): number[] {
  const today = dayOf(now);
  const days = Array.from({ length: PARTITION_DAYS_AHEAD + 1 }, (_, day) => today + day * DAY_MS);
  return days.filter(
    (day) => !partitions.some((partition) => partition.from !== undefined && partition.to !== undefined && partition.from < day + DAY_MS && partition.to > day),
  );
}

/** Partitions whose every row is at or before the cutoff, by their upper bound (the default partition never). */
export const pastCutoff = (partitions: readonly PartitionRange[], cutoff: number): PartitionRange[] =>
  partitions.filter((partition) => partition.to !== undefined && partition.to - 1 <= cutoff);

/** Whether the partition holds a row the table's expiry rule keeps although its time has passed. */
async function holdsKept(db: Knex, table: TimePartitions, partition: string, now: number): Promise<boolean> {
  if (!table.kept) return false;
  return (await table.kept(db(partition).select(db.raw('1')), now).first()) !== undefined;
}

/**
 * Drops a partition past its cutoff in the one transaction that proves it holds nothing still
 * needed: the parent locked first (the DROP needs that lock anyway, and no insert can then route a
 * row into the partition, not even one dated in the past as `svc simulate` writes), then `kept`
 * asked again under the lock (an index probe), then the DROP. False when a row is kept.
 */
async function dropIfNothingKept(trx: Knex.Transaction, table: TimePartitions, partition: string, now: number): Promise<boolean> {
  await trx.raw('lock table ?? in access exclusive mode', [table.table]);
  // Another leader may have dropped it meanwhile.
  const { rows } = await trx.raw<{ rows: { found: string | null }[] }>('select to_regclass(?)::text as found', [partition]);
  if (rows[0]?.found === null || (await holdsKept(trx, table, partition, now))) return false;
  await trx.raw('drop table ??', [partition]);
  return true;
}

/** undefined_table: a partition another leader dropped since this one listed them. */
const UNDEFINED_TABLE = '42P01';

/** duplicate_table, and unique_violation on the catalogue: another leader made the same day's partition at the same moment. */
const MADE_BY_ANOTHER = new Set(['42P07', '23505']);

/** Makes one day's partition; false when another leader made it first (then it is there all the same). */
async function createDay(trx: Knex.Transaction, table: string, day: number): Promise<boolean> {
  try {
    await trx.raw('savepoint day_partition');
    await createDayPartitions(trx, table, [day]);
    return true;
  } catch (error) {
    if (!MADE_BY_ANOTHER.has(codeOf(error) ?? '')) throw error;
    await trx.raw('rollback to savepoint day_partition');
    return false;
  }
}

async function keepTable(db: Knex, table: TimePartitions, now: number): Promise<PartitionUpkeep> {
  const partitions = await partitionsOf(db, table.table);
  const upkeep = { table: table.table, created: [] as string[], dropped: [] as string[], deferred: [] as string[] };
  if (partitions.length === 0) return upkeep;
  for (const day of missingDays(partitions, now)) {
    const name = dayName(table.table, day);
    let made = false;
    if (
      !(await briefly(db, async (trx) => {
        made = await createDay(trx, table.table, day);
      }))
    )
      upkeep.deferred.push(name);
    else if (made) upkeep.created.push(name);
  }
  for (const partition of pastCutoff(partitions, table.cutoff(now))) {
    // Asked first without a lock, so that a day still needed costs no lock on the table (gone: another leader dropped it).
    const kept = await holdsKept(db, table, partition.name, now).catch((error: unknown) => {
      if (codeOf(error) === UNDEFINED_TABLE) return true;
      throw error;
    });
    if (kept) continue; // its other rows go by the row sweep
    let dropped = false;
    const done = await briefly(db, async (trx) => {
      dropped = await dropIfNothingKept(trx, table, partition.name, now);
    });
    if (!done) upkeep.deferred.push(partition.name);
    else if (dropped) upkeep.dropped.push(partition.name);
  }
  return upkeep;
}

/**
 * The upkeep of each table: the days ahead made, the partitions past their cutoff dropped whole.
 * A plain DROP rather than DETACH … CONCURRENTLY: the latter cannot run beside a default
 * partition, and a DROP's lock on the parent is brief, waited for at most `UPKEEP_LOCK_TIMEOUT`.
 */
export async function keepPostgresPartitions(db: Knex, tables: readonly TimePartitions[], now: number): Promise<PartitionUpkeep[]> {
  const upkeeps: PartitionUpkeep[] = [];
  for (const table of tables) upkeeps.push(await keepTable(db, table, now));
  return upkeeps;
}
