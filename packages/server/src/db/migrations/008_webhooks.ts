import type { Knex } from 'knex';

/**
 * Webhooks: subscriptions (the signing secrets sealed, credentials/sealing.ts), the deliveries the
 * dispatcher owes (one per event and subscription, claimed under a lease), and every attempt made.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_subscriptions', (t) => {
    t.uuid('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.uuid('installation_id').notNullable().references('id').inTable('installations');
    t.string('endpoint_url', 2048).notNullable();
    t.text('event_types').notNullable(); // JSON list
    t.integer('payload_version').notNullable();
    t.string('state', 16).notNullable(); // active | paused | revoked
    t.integer('secret_generation').notNullable();
    t.text('secret_sealed').notNullable();
    t.text('previous_secret_sealed'); // signs too until previous_secret_until (24 h after a rotation)
    t.bigInteger('previous_secret_until');
    t.text('issued_scopes').notNullable(); // JSON list
    t.string('paused_reason', 500);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['installation_id', 'created_at']);
    t.index(['store_id', 'state']);
  });
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('id').primary();
    t.uuid('subscription_id').notNullable().references('id').inTable('webhook_subscriptions');
    t.uuid('event_id').notNullable(); // the outbox event: its payload is what is sent
    t.string('event_type', 64).notNullable();
    t.string('kind', 16).notNullable(); // event | replay
    t.string('state', 16).notNullable(); // pending | succeeded | failed | cancelled
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('next_attempt_at').notNullable();
    t.bigInteger('claimed_until'); // the lease of the worker attempting it
    t.uuid('claim_token');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('finished_at');
    t.index(['state', 'next_attempt_at']);
    // A claim counts each subscription's deliveries under lease: a range of at most a few rows here.
    t.index(['subscription_id', 'state', 'claimed_until']);
    t.index(['finished_at']);
  });
  await knex.schema.createTable('webhook_attempts', (t) => {
    t.uuid('id').primary();
    t.uuid('subscription_id').notNullable().references('id').inTable('webhook_subscriptions');
    t.bigInteger('delivery_id'); // null for webhooks.test, which is no delivery to retry
    t.uuid('event_id').notNullable();
    t.string('event_type', 64).notNullable();
    t.integer('attempt').notNullable();
    t.string('outcome', 16).notNullable();
    t.integer('response_status');
    t.integer('latency_ms').notNullable();
    t.string('error', 500);
    t.bigInteger('attempted_at').notNullable();
    t.index(['subscription_id', 'attempted_at']);
    t.index(['attempted_at']);
  });
  // Replay reads a store's events of a time range by type.
  await knex.schema.alterTable('outbox_events', (t) => {
    t.index(['store_id', 'type', 'occurred_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('outbox_events', (t) => {
    t.dropIndex(['store_id', 'type', 'occurred_at']);
  });
  await knex.schema.dropTable('webhook_attempts');
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_subscriptions');
}
