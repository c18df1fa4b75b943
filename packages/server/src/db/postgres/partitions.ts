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

/** lock_not_available (lock_timeout), and check_violation (rows of the range already in the default partition). */
const DEFERRED_CODES = new Set(['55P03', '23514']);

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

/** One partition per UTC day starting at each of `days`. */
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
  await db.raw('create table ?? partition of ?? default', [`${table}_p_default`, table]);
}

const isDeferrable = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'code' in error && DEFERRED_CODES.has(String((error as { code: unknown }).code));

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

async function keepTable(db: Knex, table: TimePartitions, now: number): Promise<PartitionUpkeep> {
  const partitions = await partitionsOf(db, table.table);
  const upkeep = { table: table.table, created: [] as string[], dropped: [] as string[], deferred: [] as string[] };
  if (partitions.length === 0) return upkeep;
  for (const day of missingDays(partitions, now)) {
    const name = dayName(table.table, day);
    if (await briefly(db, (trx) => createDayPartitions(trx, table.table, [day]))) upkeep.created.push(name);
    else upkeep.deferred.push(name);
  }
  for (const partition of pastCutoff(partitions, table.cutoff(now))) {
    if (table.kept) {
      const kept = await table.kept(db(partition.name).select(db.raw('1'))).first();
      if (kept) continue; // its other rows go by the row sweep
    }
    if (await briefly(db, (trx) => trx.raw('drop table ??', [partition.name]))) upkeep.dropped.push(partition.name);
    else upkeep.deferred.push(partition.name);
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
