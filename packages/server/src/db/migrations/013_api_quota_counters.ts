import type { Knex } from 'knex';

/**
 * The store API's and OAuth's quotas move onto rate-limiter-flexible (services/rate-limit.ts), as the
 * dashboard's sign-in counters did: on PostgreSQL its store keeps one row per quota key with the
 * points spent in the key's window and the epoch millisecond the window ends. The columns and their
 * order are the library's own table (its upsert inserts by position). SQLite keeps quotas in the one
 * server process's memory, so the table stays empty there. The fixed windows of 002 go.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('api_quota_counters', (t) => {
    t.string('key', 255).primary();
    t.integer('points').notNullable().defaultTo(0);
    t.bigInteger('expire');
    t.index(['expire']);
  });
  await knex.schema.dropTable('rate_limit_windows');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limit_windows', (t) => {
    t.string('bucket', 200).notNullable();
    t.bigInteger('window_start').notNullable();
    t.integer('hits').notNullable();
    t.primary(['bucket', 'window_start']);
  });
  await knex.schema.dropTable('api_quota_counters');
}
