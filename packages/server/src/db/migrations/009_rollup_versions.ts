import type { Knex } from 'knex';

/**
 * A counter per store that rises in every transaction that changes the store's daily rollups
 * (an order counted or taken away), so a report computed from them can be kept and reused until it
 * rises (analytics.overview's distinct customers are the costly part). No row yet means 0.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('store_rollup_versions', (t) => {
    t.uuid('store_id').primary().references('id').inTable('stores');
    t.bigInteger('version').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('store_rollup_versions');
}
