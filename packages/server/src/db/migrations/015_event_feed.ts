import type { Knex } from 'knex';

const FEED_INDEX = 'outbox_events_feed_index';
const LOG_INDEX = 'webhook_deliveries_log_index';
const EVENT_INDEX = 'webhook_deliveries_event_index';
const EXPIRY_INDEX = 'webhook_deliveries_event_expiry_index';
const ATTEMPTS_INDEX = 'webhook_attempts_delivery_index';

/**
 * The events feed and the delivery log (docs/decisions/0067-events-feed-and-delivery-log.md).
 *
 * - `outbox_events (store_id, occurred_at, id)`: events.list walks a store's events newest first
 *   (core/paging `NEWEST_FIRST`), the row-value bound included, as one range read backwards. It
 *   replaces `(store_id, occurred_at)`, its prefix, which nothing else reads.
 * - `webhook_deliveries.event_occurred_at`: each delivery keeps its event's `occurred_at`, so that
 *   the delivery log walks one subscription's deliveries newest event first through
 *   `(subscription_id, event_occurred_at, event_id)` without reading the events, and deliveries
 *   expire with their event (30 days after it occurred). Filled here from the events (or, for an
 *   event already deleted, the delivery's own `created_at`, which is later than the event).
 * - `webhook_deliveries (event_id, subscription_id)`: an event's deliveries, for the feed's
 *   `delivery` filter and for one entry of the log.
 * - `webhook_deliveries (event_occurred_at)`: what housekeeping deletes.
 * - `webhook_attempts (delivery_id)`: the attempts of the deliveries a log page shows, and of
 *   those that expire.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('outbox_events', (t) => {
    t.index(['store_id', 'occurred_at', 'id'], FEED_INDEX);
  });
  await knex.schema.alterTable('outbox_events', (t) => {
    t.dropIndex(['store_id', 'occurred_at']);
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.bigInteger('event_occurred_at').nullable();
  });
  await knex.raw(
    `update webhook_deliveries set event_occurred_at = coalesce(
       (select o.occurred_at from outbox_events o where o.id = webhook_deliveries.event_id),
       webhook_deliveries.created_at)`,
  );
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['subscription_id', 'event_occurred_at', 'event_id'], LOG_INDEX);
    t.index(['event_id', 'subscription_id'], EVENT_INDEX);
    t.index(['event_occurred_at'], EXPIRY_INDEX);
  });
  await knex.schema.alterTable('webhook_attempts', (t) => {
    t.index(['delivery_id'], ATTEMPTS_INDEX);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_attempts', (t) => {
    t.dropIndex(['delivery_id'], ATTEMPTS_INDEX);
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropIndex(['event_occurred_at'], EXPIRY_INDEX);
    t.dropIndex(['event_id', 'subscription_id'], EVENT_INDEX);
    t.dropIndex(['subscription_id', 'event_occurred_at', 'event_id'], LOG_INDEX);
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('event_occurred_at');
  });
  await knex.schema.alterTable('outbox_events', (t) => {
    t.index(['store_id', 'occurred_at']);
  });
  await knex.schema.alterTable('outbox_events', (t) => {
    t.dropIndex(['store_id', 'occurred_at', 'id'], FEED_INDEX);
  });
}
