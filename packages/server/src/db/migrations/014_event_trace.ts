import type { Knex } from 'knex';

const OUTBOX_WAITING_INDEX = 'outbox_events_waiting_index';

/**
 * The W3C trace of the request that caused an event (`traceparent`, and `tracestate` when the
 * caller sent one), so that each of its webhook deliveries carries a `traceparent` of that trace:
 * a receiver's logs join the app's request that changed the store. Null for events no request
 * caused (a job, the CLI) and for events written before this migration. And a partial index of the
 * events still waiting for their fan-out.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('outbox_events', (t) => {
    t.string('trace_parent', 55).nullable();
    t.string('trace_state', 512).nullable();
    // The events not fanned out yet, oldest first: what the fan-out takes and what `/metrics` counts
    // at each scrape (the outbox's backlog and its oldest event), without a walk over 30 days of events.
    t.index(['occurred_at', 'id'], OUTBOX_WAITING_INDEX, { predicate: knex.whereNull('dispatched_at') });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('outbox_events', (t) => {
    t.dropIndex(['occurred_at', 'id'], OUTBOX_WAITING_INDEX);
    t.dropColumn('trace_parent');
    t.dropColumn('trace_state');
  });
}
