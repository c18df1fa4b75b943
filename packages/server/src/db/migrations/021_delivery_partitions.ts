import type { Knex } from 'knex';
import { forEngine } from '../engine';
import { type DayPartitioning, partitionByDay, unpartition } from '../postgres/day-partitioning';

/**
 * `webhook_deliveries`, the table with the most rows (one per event and subscription), partitioned
 * by day of `created_at` on PostgreSQL like the three tables of 019
 * (docs/decisions/0083-webhook-deliveries-by-day.md), with the key `(store_id, id, created_at)`: a
 * day's partition is dropped whole once each of its deliveries is final and its event past the 30
 * days events are kept. `created_at` rather than `event_occurred_at`: it is never null, and a
 * delivery is made after its event occurred, so a day of deliveries expires no earlier than the
 * day of events it carries; what a replay makes of an old event expires with its own day.
 *
 * Made by the same re-entrant steps as 019 (db/postgres/day-partitioning.ts): no row copied, the
 * key's index built concurrently on a large table, a swap of milliseconds. Expand only: the previous
 * release names no unique index of this table, and inserts deliveries without `store_id` (the
 * filler trigger 018 added moves to the partitioned table with the swap).
 *
 * SQLite keeps its plain table: nothing to do there.
 */

/** Not in one transaction: concurrent index builds cannot run in one, and each step commits on its own. */
export const config = { transaction: false };

const DELIVERIES: DayPartitioning = { table: 'webhook_deliveries', column: 'created_at', keyBefore: ['store_id', 'id'] };

export async function up(knex: Knex): Promise<void> {
  await forEngine(knex, { postgres: (db: Knex) => partitionByDay(db, DELIVERIES), sqlite: async () => undefined })(knex);
}

export async function down(knex: Knex): Promise<void> {
  await forEngine(knex, { postgres: (db: Knex) => db.transaction((trx) => unpartition(trx, DELIVERIES)), sqlite: async () => undefined })(knex);
}
