import type { Knex } from 'knex';

/**
 * The catalog: categories, products (with their prices, media, SEO and stock), inventory
 * adjustments and the units (codes) of digital products. Every table carries `store_id` and every
 * read and write is scoped by it. Ids are global integers (positive, as the interface shows); lists
 * page by `id` on `(store_id, …, id)` indexes, never by OFFSET. Money is integer halalas (SAR × 100),
 * shown as `"0.00"` strings; lists are JSON text. `resource_version` rises on every change.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('categories', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('name', 100).notNullable();
    t.string('name_key', 100).notNullable(); // lower-cased name: unique per store, case-insensitively
    t.string('slug', 120);
    t.text('description');
    t.integer('parent_id').references('id').inTable('categories');
    t.integer('sort_order').notNullable().defaultTo(0);
    t.string('status', 8).notNullable().defaultTo('active');
    t.string('image', 2048);
    t.string('seo_title', 255);
    t.string('seo_description', 500);
    t.integer('resource_version').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['store_id', 'name_key']);
    t.unique(['store_id', 'slug']);
    t.index(['store_id', 'id']);
  });

  await knex.schema.createTable('products', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('name', 255).notNullable();
    t.text('description').notNullable().defaultTo('');
    t.string('short_desc', 500);
    t.integer('category_id').references('id').inTable('categories');
    t.string('slug', 120);
    t.text('keywords').notNullable().defaultTo('[]');
    t.text('supported_devices'); // JSON object or null
    t.string('seo_title', 255);
    t.string('seo_description', 500);
    t.string('og_image', 2048);
    t.text('images').notNullable().defaultTo('[]'); // JSON [{url, alt, sort, is_default}]
    t.string('product_kind', 16).notNullable();
    t.string('status', 16).notNullable().defaultTo('inactive');
    t.bigInteger('price_halalas').notNullable().defaultTo(0);
    t.bigInteger('old_price_halalas');
    t.string('price_state', 16).notNullable().defaultTo('required');
    t.integer('quantity').notNullable().defaultTo(0); // stock of physical and service products
    t.integer('resource_version').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['store_id', 'slug']);
    t.index(['store_id', 'id']);
    t.index(['store_id', 'status', 'id']);
    t.index(['store_id', 'category_id', 'id']);
    t.index(['store_id', 'updated_at']);
  });

  await knex.schema.createTable('inventory_adjustments', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.integer('product_id').notNullable().references('id').inTable('products');
    t.integer('delta').notNullable();
    t.string('reason', 16).notNullable();
    t.string('note', 500);
    t.integer('quantity_before').notNullable();
    t.integer('quantity_after').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['store_id', 'product_id', 'id']);
  });

  await knex.schema.createTable('digital_units', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.integer('product_id').notNullable().references('id').inTable('products');
    t.string('code', 500).notNullable(); // delivered to the buyer, so kept as given
    t.integer('adjustment_id').references('id').inTable('inventory_adjustments');
    t.bigInteger('delivered_at'); // sold; null while available
    t.bigInteger('created_at').notNullable();
    t.index(['store_id', 'product_id', 'delivered_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['digital_units', 'inventory_adjustments', 'products', 'categories']) await knex.schema.dropTableIfExists(table);
}
