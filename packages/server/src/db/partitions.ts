/**
 * The high-churn tables kept in partitions by time (docs/decisions/0080-partitions-by-time.md): on
 * PostgreSQL each is range-partitioned by day on one column (migration 019), partitions are made
 * ahead by the housekeeping leader, and a partition whose every row has expired is dropped whole,
 * which writes almost no WAL and leaves no dead rows to vacuum. SQLite keeps plain tables, and both
 * delete the rows of a partly expired day one by one, by the same rule. The upkeep is the engine's
 * `partitions` port, run by the housekeeping leader before the row sweeps.
 */
export type { PartitionUpkeep, TimePartitions } from './engine';

/** A UTC day in epoch milliseconds: partitions hold whole days. */
export const DAY_MS = 24 * 60 * 60 * 1000;

/** Days made ahead of today, so that an upkeep missed for a week still finds each insert its day's partition. */
export const PARTITION_DAYS_AHEAD = 7;

/** The start of the UTC day `at` falls in. */
export const dayOf = (at: number): number => Math.floor(at / DAY_MS) * DAY_MS;
