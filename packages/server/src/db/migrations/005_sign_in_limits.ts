import type { Knex } from 'knex';

/**
 * The dashboard's sign-in counters (dashboard/sign-in-guard.ts), kept by rate-limiter-flexible's
 * PostgreSQL and SQLite stores: one row per counter key with its points and the epoch millisecond at
 * which it expires (null: never). The columns and their order are the library's own table: its
 * PostgreSQL upsert inserts by position. Created here, not by the library at run time, because
 * migrations are the schema. `expire` is indexed for the sweep of expired rows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sign_in_limits', (t) => {
    t.string('key', 255).primary();
    t.integer('points').notNullable().defaultTo(0);
    t.bigInteger('expire');
    t.index(['expire']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('sign_in_limits');
}
