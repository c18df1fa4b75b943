import type { Knex } from 'knex';

/** The only date version there was before versions could be chosen: what every app and subscription was made under. */
const FIRST_VERSION = '2026-10-15';

/**
 * Date versions (docs/decisions/0055-date-versions.md): each app's pinned
 * version (null: unpinned, the current one applies), each webhook subscription's version, and which
 * installation called under which version, a row per pair with the first and last day seen (UTC)
 * and the number of days it was seen, written at most once a day per pair and process.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('apps', (t) => {
    t.string('api_version', 10);
  });
  await knex('apps').update({ api_version: FIRST_VERSION });
  await knex.schema.alterTable('webhook_subscriptions', (t) => {
    t.string('api_version', 10).notNullable().defaultTo(FIRST_VERSION);
  });
  await knex.schema.createTable('api_version_usage', (t) => {
    t.uuid('installation_id').notNullable().references('id').inTable('installations');
    t.string('api_version', 10).notNullable();
    t.string('first_seen_day', 10).notNullable();
    t.string('last_seen_day', 10).notNullable();
    t.integer('days_seen').notNullable();
    t.primary(['installation_id', 'api_version']);
    t.index(['api_version', 'last_seen_day']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('api_version_usage');
  await knex.schema.alterTable('webhook_subscriptions', (t) => {
    t.dropColumn('api_version');
  });
  await knex.schema.alterTable('apps', (t) => {
    t.dropColumn('api_version');
  });
}
