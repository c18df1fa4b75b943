import type { Knex } from 'knex';
import type { ExpiryRule } from '../../../services/housekeeping';
import { OUTBOX_KEPT_MS } from '../../../services/outbox';

/** Deliveries not yet expired at `now` whatever their day: pending, or carrying an event (or, untimed, finished) within the 30 days. */
const stillKept = (rows: Knex.QueryBuilder, now: number) =>
  rows.where((kept) =>
    kept
      .whereNull('finished_at')
      .orWhere('event_occurred_at', '>', now - OUTBOX_KEPT_MS)
      .orWhere((untimed) => untimed.whereNull('event_occurred_at').where('finished_at', '>', now - OUTBOX_KEPT_MS)),
  );

/**
 * What is kept of delivery: deliveries and their attempts as long as the event they carried, 30
 * days after it occurred (`event_occurred_at`; the delivery log shows no more than that), a
 * delivery once it has finished (a pending one is cancelled when claimed, its event gone). A
 * delivery written without its event's time goes 30 days after it finished. On PostgreSQL the
 * table is partitioned by day of `created_at` (migration 021): a day made 30 days ago holds
 * deliveries of events at least that old, and goes whole unless one of them is still kept
 * (pending, or an event dated later: clock skew); the row sweep takes the rest.
 */
export const webhookDeliveriesExpiry: ExpiryRule = {
  table: 'webhook_deliveries',
  key: ['store_id', 'id', 'created_at'],
  partitions: { column: 'created_at', cutoff: (now) => now - OUTBOX_KEPT_MS, kept: stillKept },
  expired: (rows, now) =>
    rows
      .whereNotNull('finished_at')
      .where((kept) =>
        kept
          .where('event_occurred_at', '<=', now - OUTBOX_KEPT_MS)
          .orWhere((untimed) => untimed.whereNull('event_occurred_at').where('finished_at', '<=', now - OUTBOX_KEPT_MS)),
      ),
};

/**
 * Attempts go with their delivery's event (swept before the deliveries, jobs/housekeeping), and in
 * any case 30 days after they were made, which is never before their event (webhooks.test's too).
 */
export const webhookAttemptsExpiry: ExpiryRule = {
  table: 'webhook_attempts',
  key: ['store_id', 'id', 'attempted_at'],
  // A day's partition goes whole once the last of its attempts is 30 days old (db/partitions.ts).
  partitions: { column: 'attempted_at', cutoff: (now) => now - OUTBOX_KEPT_MS },
  expired: (rows, now, db) =>
    rows.where((expired) =>
      expired.where('attempted_at', '<=', now - OUTBOX_KEPT_MS).orWhereIn(
        'delivery_id',
        db('webhook_deliveries')
          .select('id')
          .where('event_occurred_at', '<=', now - OUTBOX_KEPT_MS),
      ),
    ),
};
