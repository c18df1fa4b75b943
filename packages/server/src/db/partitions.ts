import type { Knex } from 'knex';
import { engineOf } from './engine';

/**
 * The high-churn tables kept in partitions by time (docs/decisions/0080-partitions-by-time.md): on
 * PostgreSQL each is range-partitioned by day on one column (migration 019), partitions are made
 * ahead by the housekeeping leader, and a partition whose every row has expired is dropped whole,
 * which writes almost no WAL and leaves no dead rows to vacuum. SQLite keeps plain tables, and both
 * delete the rows of a partly expired day one by one, by the same rule.
 */
export interface TimePartitions {
  readonly table: string;
  /** The partition key: epoch milliseconds, never null. */
  readonly column: string;
  /** Every row whose `column` is at most this has expired at `now` (the table's expiry rule says the same). */
  readonly cutoff: (now: number) => number;
  /**
   * Rows the expiry rule keeps although their time has passed (events not fanned out yet): a
   * partition holding one is not dropped, and its other rows are deleted one by one.
   */
  readonly kept?: (rows: Knex.QueryBuilder) => Knex.QueryBuilder;
}

/** What one upkeep did to a table's partitions, by name. */
export interface PartitionUpkeep {
  readonly table: string;
  readonly created: readonly string[];
  readonly dropped: readonly string[];
  /** Partitions left for the next run, with the reason (a lock not granted in time, rows of their range in the default partition). */
  readonly deferred: readonly string[];
}

/** A UTC day in epoch milliseconds: partitions hold whole days. */
export const DAY_MS = 24 * 60 * 60 * 1000;

/** Days made ahead of today, so that an upkeep missed for a week still finds each insert its day's partition. */
export const PARTITION_DAYS_AHEAD = 7;

/** The start of the UTC day `at` falls in. */
export const dayOf = (at: number): number => Math.floor(at / DAY_MS) * DAY_MS;

/**
 * Makes the coming days' partitions and drops those wholly expired, table by table (PostgreSQL);
 * nothing on SQLite, whose tables are plain. Run by the housekeeping leader before the row sweeps.
 */
export const keepPartitions = (db: Knex, tables: readonly TimePartitions[], now: number): Promise<PartitionUpkeep[]> =>
  engineOf(db).keepPartitions(db, tables, now);
