import type { Knex } from 'knex';

/**
 * What the OAuth server needs beyond 001: private apps (available to one store only), pending
 * authorization requests between the consent page and the owner's decision, the coalescing and
 * recovery state of token operations, and fixed-window rate-limit counters shared by instances.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('apps', (t) => {
    t.uuid('store_id').nullable().references('id').inTable('stores'); // null: available to every store
  });

  await knex.schema.createTable('authorization_requests', (t) => {
    t.uuid('id').primary();
    t.string('session_hash', 64).notNullable(); // the dashboard session that saw the consent page
    t.uuid('owner_id').notNullable().references('id').inTable('store_owners');
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.uuid('app_id').notNullable().references('id').inTable('apps');
    t.uuid('version_id').notNullable().references('id').inTable('app_versions');
    t.string('redirect_uri', 2048).notNullable();
    t.string('state', 512).notNullable();
    t.string('code_challenge', 43).notNullable();
    t.text('scopes').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('decided_at');
    t.bigInteger('created_at').notNullable();
  });

  await knex.schema.alterTable('token_operations', (t) => {
    // The issued pair, encrypted with a key derived from the request body (which only the caller
    // holds), so identical concurrent requests all receive it; erased when the sharing window ends.
    t.text('result_ciphertext');
    t.bigInteger('share_until');
    t.bigInteger('lease_until'); // an IN_PROGRESS claim older than this was abandoned (crash) and may be retaken
    t.bigInteger('recovered_at');
    t.integer('revoked_tokens');
  });

  await knex.schema.alterTable('tokens', (t) => {
    t.index(['parent_id']);
  });

  await knex.schema.createTable('rate_limit_windows', (t) => {
    t.string('bucket', 200).notNullable();
    t.bigInteger('window_start').notNullable();
    t.integer('hits').notNullable();
    t.primary(['bucket', 'window_start']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('rate_limit_windows');
  await knex.schema.alterTable('tokens', (t) => {
    t.dropIndex(['parent_id']);
  });
  await knex.schema.alterTable('token_operations', (t) => {
    t.dropColumns('result_ciphertext', 'share_until', 'lease_until', 'recovered_at', 'revoked_tokens');
  });
  await knex.schema.dropTableIfExists('authorization_requests');
  await knex.schema.alterTable('apps', (t) => {
    t.dropForeign(['store_id']);
    t.dropColumn('store_id');
  });
}
