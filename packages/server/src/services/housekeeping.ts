import type { Knex } from 'knex';
import type { Clock } from '../core/clock';
import type { Partitions } from '../db/engine';
import type { TimePartitions } from '../db/partitions';

/**
 * When the rows of one table are no longer needed. Each rule sits beside the code that writes its
 * table, which is where what the rows are still needed for is known; the housekeeping job is the
 * list of them.
 */
export interface ExpiryRule {
  readonly table: string;
  /** The primary key's columns: expired rows are chosen, then deleted, by them. */
  readonly key: string | readonly string[];
  /** Narrows a select on the table to the rows that nothing needs any more at `now`. */
  readonly expired: (rows: Knex.QueryBuilder, now: number, db: Knex) => Knex.QueryBuilder;
  /**
   * The table is kept in partitions by day on this column where the database has them
   * (PostgreSQL, migration 019): a partition whose rows are all at or before `cutoff` (and none
   * `kept`) is dropped whole before the row sweep, which deletes the rest by `expired`. The cutoff
   * must agree with `expired`: every row at or before it has expired.
   */
  readonly partitions?: Omit<TimePartitions, 'table'>;
}

/** The partitioned tables among the rules, as db/partitions.ts takes them. */
export const partitionedTables = (rules: readonly ExpiryRule[]): TimePartitions[] =>
  rules.flatMap((rule) => (rule.partitions ? [{ table: rule.table, ...rule.partitions }] : []));

/**
 * Codes, launch tokens and consent requests are kept this long past their expiry although nothing
 * accepts them any more, so that a late attempt is told it expired or was used, not that it is unknown.
 */
export const LATE_USE_EXPLAINED_MS = 24 * 60 * 60 * 1000;

/** The rule of a table whose rows are dead once `expires_at` has passed (plus `graceMs`). */
export const expiresAtRule = (table: string, key: ExpiryRule['key'], graceMs = 0): ExpiryRule => ({
  table,
  key,
  expired: (rows, now) => rows.where('expires_at', '<=', now - graceMs),
});

export interface SweepLimits {
  /** Rows one statement deletes at most, so that no statement holds its locks for long. */
  readonly batchRows: number;
  /** Rows one run deletes from one table at most, so that a run ends; the rest wait for the next run. */
  readonly maxRowsPerTable: number;
}

/**
 * A batch of 1,000 rows took ~10 ms on PostgreSQL here, so a run stays within seconds per table.
 * The cap is above what a table gains between runs under load: rate-limit windows gain a row per
 * active bucket every 5 seconds, 600,000 in 10 minutes for 5,000 busy installations.
 */
export const SWEEP_LIMITS: SweepLimits = { batchRows: 1000, maxRowsPerTable: 1_000_000 };

export interface TableSweep {
  readonly table: string;
  readonly deleted: number;
  /** DELETE statements run, each of at most `batchRows` rows. */
  readonly statements: number;
  /** The run stopped at `maxRowsPerTable`: expired rows may remain for the next run. */
  readonly capped: boolean;
  /** Partitions dropped whole before the row sweep (PostgreSQL: db/partitions.ts). */
  readonly partitionsDropped?: number;
}

/** Deletes one table's expired rows, a batch per statement, until none is left or the cap is reached. */
async function sweepTable(db: Knex, rule: ExpiryRule, now: number, limits: SweepLimits): Promise<TableSweep> {
  const key = typeof rule.key === 'string' ? [rule.key] : [...rule.key];
  let deleted = 0;
  let statements = 0;
  while (deleted < limits.maxRowsPerTable) {
    const batch = Math.min(limits.batchRows, limits.maxRowsPerTable - deleted);
    const chosen = rule.expired(db(rule.table).select(key), now, db).limit(batch);
    // `(key columns) in (select … limit n)`: a row value, the same SQL on SQLite and PostgreSQL.
    const count = await db(rule.table).whereIn(key, chosen).delete();
    deleted += count;
    statements += 1;
    if (count < batch) return { table: rule.table, deleted, statements, capped: false };
  }
  return { table: rule.table, deleted, statements, capped: true };
}

/**
 * Deletes what every rule says has expired, table by table (on PostgreSQL the partitioned tables'
 * whole days first, and their days ahead made: db/partitions.ts), each statement its own transaction,
 * so that requests are served between batches even on SQLite's single connection. `now` is read
 * once: a run judges every row against the same instant. (It takes the db, engine and clock of `Deps`
 * without naming it: services.ts imports the rate limiter, whose rule is an ExpiryRule.)
 */
export async function deleteExpired(
  { db, engine, clock }: { db: Knex; engine: { readonly partitions: Partitions }; clock: Clock },
  rules: readonly ExpiryRule[],
  limits: SweepLimits = SWEEP_LIMITS,
): Promise<TableSweep[]> {
  const now = clock.now();
  // Whole partitions first: the row sweep then finds only the rows of days partly expired.
  const upkeeps = await engine.partitions.keep(db, partitionedTables(rules), now);
  const sweeps: TableSweep[] = [];
  for (const rule of rules) {
    const sweep = await sweepTable(db, rule, now, limits);
    const dropped = upkeeps.find((upkeep) => upkeep.table === rule.table)?.dropped.length ?? 0;
    sweeps.push(dropped > 0 ? { ...sweep, partitionsDropped: dropped } : sweep);
  }
  return sweeps;
}
