import type { Knex } from 'knex';

/**
 * The platform side: stores and owners, apps and their versions and secrets, installations, and the
 * OAuth state (codes, grants, tokens, token operations, launch tokens), dashboard sessions and the
 * event outbox. Instants are epoch milliseconds (bigint) so that expiry comparisons are the same
 * on SQLite and PostgreSQL; lists of scopes and URLs are JSON text. Credentials are stored only as
 * SHA-256 hashes; passwords as scrypt hashes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('store_owners', (t) => {
    t.uuid('id').primary();
    t.string('email', 254).notNullable().unique();
    t.string('name', 200).notNullable();
    t.string('password_hash', 200).notNullable();
    t.bigInteger('created_at').notNullable();
  });

  await knex.schema.createTable('stores', (t) => {
    t.uuid('id').primary();
    t.uuid('owner_id').notNullable().references('id').inTable('store_owners');
    t.string('name', 200).notNullable();
    t.string('domain', 253).notNullable().unique();
    t.string('currency', 3).notNullable().defaultTo('SAR');
    t.string('timezone', 64).notNullable().defaultTo('Asia/Riyadh');
    t.string('locale', 8).notNullable().defaultTo('ar');
    t.string('routing_state', 16).notNullable().defaultTo('active');
    t.integer('route_epoch').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
  });

  await knex.schema.createTable('apps', (t) => {
    t.uuid('id').primary(); // the OAuth client_id
    t.string('name', 200).notNullable();
    t.integer('auth_epoch').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
  });

  await knex.schema.createTable('app_versions', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('id').inTable('apps');
    t.integer('number').notNullable();
    t.text('redirect_urls').notNullable();
    t.string('launch_url', 2048).notNullable();
    t.text('required_scopes').notNullable();
    t.text('optional_scopes').notNullable();
    t.bigInteger('created_at').notNullable();
    t.unique(['app_id', 'number']);
  });

  await knex.schema.createTable('client_secrets', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('id').inTable('apps');
    t.string('secret_hash', 64).notNullable().unique();
    t.string('hint', 8).notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('rotated_at'); // replaced by a newer secret: valid 24 h after this
    t.bigInteger('revoked_at'); // invalid at once
    t.index(['app_id']);
  });

  await knex.schema.createTable('installations', (t) => {
    t.uuid('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.uuid('app_id').notNullable().references('id').inTable('apps');
    t.uuid('version_id').notNullable().references('id').inTable('app_versions');
    t.integer('generation').notNullable().defaultTo(1);
    t.text('granted_scopes').notNullable();
    t.integer('grant_revision').notNullable().defaultTo(1);
    t.string('status', 16).notNullable();
    t.bigInteger('installed_at').notNullable();
    t.bigInteger('uninstalled_at');
    t.unique(['store_id', 'app_id']);
  });

  await knex.schema.createTable('authorization_codes', (t) => {
    t.uuid('id').primary();
    t.string('code_hash', 64).notNullable().unique();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.uuid('app_id').notNullable().references('id').inTable('apps');
    t.uuid('version_id').notNullable().references('id').inTable('app_versions');
    t.uuid('installation_id').notNullable().references('id').inTable('installations');
    t.string('redirect_uri', 2048).notNullable();
    t.string('code_challenge', 43).notNullable();
    t.text('scopes').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('consumed_at');
    t.uuid('grant_id'); // the grant its exchange created: revoked if the code is used again
    t.bigInteger('created_at').notNullable();
  });

  await knex.schema.createTable('grants', (t) => {
    t.uuid('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.uuid('app_id').notNullable().references('id').inTable('apps');
    t.uuid('installation_id').notNullable().references('id').inTable('installations');
    t.integer('generation').notNullable();
    t.integer('grant_revision').notNullable();
    t.text('scopes').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('revoked_at');
    t.string('revoked_reason', 64);
    t.index(['installation_id']);
  });

  await knex.schema.createTable('token_operations', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('id').inTable('apps');
    t.string('request_hash', 64).notNullable();
    t.string('grant_type', 32).notNullable();
    t.string('state', 40).notNullable();
    t.uuid('store_id');
    t.uuid('installation_id');
    t.uuid('grant_id');
    t.string('error_code', 64);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('completed_at');
    t.unique(['app_id', 'request_hash']);
  });

  await knex.schema.createTable('tokens', (t) => {
    t.uuid('id').primary();
    t.string('kind', 8).notNullable(); // access | refresh
    t.string('token_hash', 64).notNullable().unique();
    t.uuid('grant_id').notNullable().references('id').inTable('grants');
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.uuid('installation_id').notNullable().references('id').inTable('installations');
    t.uuid('operation_id').notNullable().references('id').inTable('token_operations');
    t.uuid('parent_id'); // the refresh token this pair was issued for
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('first_used_at');
    t.bigInteger('consumed_at'); // refresh tokens: exchanged
    t.bigInteger('revoked_at');
    t.bigInteger('created_at').notNullable();
    t.index(['grant_id']);
    t.index(['operation_id']);
  });

  await knex.schema.createTable('launch_tokens', (t) => {
    t.uuid('id').primary();
    t.string('token_hash', 64).notNullable().unique();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.uuid('app_id').notNullable().references('id').inTable('apps');
    t.uuid('installation_id');
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at');
    t.bigInteger('created_at').notNullable();
  });

  await knex.schema.createTable('dashboard_sessions', (t) => {
    t.string('session_hash', 64).primary();
    t.uuid('owner_id').notNullable().references('id').inTable('store_owners');
    t.string('csrf_token', 64).notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
  });

  await knex.schema.createTable('outbox_events', (t) => {
    t.uuid('id').primary(); // the event id, also the webhook-id header
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.uuid('installation_id');
    t.string('type', 64).notNullable();
    t.text('payload').notNullable();
    t.bigInteger('occurred_at').notNullable();
    t.bigInteger('dispatched_at');
    t.index(['store_id', 'occurred_at']);
    t.index(['dispatched_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'outbox_events',
    'dashboard_sessions',
    'launch_tokens',
    'tokens',
    'token_operations',
    'grants',
    'authorization_codes',
    'installations',
    'client_secrets',
    'app_versions',
    'apps',
    'stores',
    'store_owners',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
