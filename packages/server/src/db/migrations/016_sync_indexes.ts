import type { Knex } from 'knex';

/** The tables whose lists walk by `(updated_at, id)` given `updated_since` (inventory.list walks products). */
const SYNCED_TABLES = ['products', 'orders', 'payments', 'abandoned_carts', 'coupons', 'reviews', 'pages', 'categories'] as const;

const syncIndexOf = (table: string) => `${table}_sync_index`;

/**
 * A `(store_id, updated_at, id)` index on every table a list walks by update time (`updated_since`,
 * core/paging `BY_UPDATE`): a sync page is one range of it on PostgreSQL and SQLite alike, the
 * row-value bound `(updated_at, id) > (?, ?)` included, in the walk's order, with no sort
 * (docs/decisions/0069-incremental-lists.md). Products' `(store_id, updated_at)` index is replaced by
 * theirs: it ended without the id, so PostgreSQL sorted each page's ties.
 */
export async function up(knex: Knex): Promise<void> {
  for (const table of SYNCED_TABLES) {
    await knex.schema.alterTable(table, (t) => {
      t.index(['store_id', 'updated_at', 'id'], syncIndexOf(table));
    });
  }
  await knex.schema.alterTable('products', (t) => {
    t.dropIndex(['store_id', 'updated_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('products', (t) => {
    t.index(['store_id', 'updated_at']);
  });
  for (const table of SYNCED_TABLES) {
    await knex.schema.alterTable(table, (t) => {
      t.dropIndex(['store_id', 'updated_at', 'id'], syncIndexOf(table));
    });
  }
}
