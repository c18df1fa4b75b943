import type { Knex } from 'knex';

/**
 * The storefront: what shoppers do (customers, coupons, orders and their lines, payments, digital
 * deliveries, abandoned carts, reviews) and the daily rollups the analytics read. Every table
 * carries `store_id` and every read and write is scoped by it; lists page by `id` on
 * `(store_id, …, id)` indexes. Money is integer halalas. A rollup day is the store's calendar day in
 * Asia/Riyadh (UTC+3, no daylight saving) as `YYYY-MM-DD`, kept in step with orders in the
 * transaction that changes them, so a report reads one row per day, not one per order.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('customers', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('name', 200).notNullable();
    t.string('email', 254);
    t.string('mobile', 16);
    t.bigInteger('created_at').notNullable();
    t.index(['store_id', 'id']);
  });

  await knex.schema.createTable('coupons', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('code', 64).notNullable();
    t.string('code_key', 64).notNullable(); // lower-cased code: unique per store, case-insensitively
    t.string('type', 16).notNullable();
    t.bigInteger('amount_halalas').notNullable(); // percentage coupons: hundredths of a percent (10.00 % is 1000)
    t.string('status', 8).notNullable().defaultTo('active');
    t.bigInteger('starts_at');
    t.bigInteger('expires_at');
    t.integer('usage_limit');
    t.integer('usage_count').notNullable().defaultTo(0);
    t.bigInteger('minimum_order_halalas');
    t.boolean('free_shipping').notNullable().defaultTo(false);
    t.integer('resource_version').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['store_id', 'code_key']);
    t.index(['store_id', 'id']);
    t.index(['store_id', 'status', 'id']);
  });

  await knex.schema.createTable('orders', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('reference', 32).notNullable();
    t.string('status', 16).notNullable();
    t.string('payment_status', 16).notNullable();
    t.integer('customer_id').notNullable().references('id').inTable('customers');
    t.string('coupon_code', 64);
    t.bigInteger('subtotal_halalas').notNullable();
    t.bigInteger('discount_halalas').notNullable();
    t.bigInteger('shipping_halalas').notNullable();
    t.bigInteger('tax_halalas').notNullable();
    t.bigInteger('total_halalas').notNullable();
    t.integer('resource_version').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('paid_at');
    t.bigInteger('updated_at').notNullable();
    t.unique(['store_id', 'reference']);
    t.index(['store_id', 'id']);
    t.index(['store_id', 'status', 'id']);
    t.index(['store_id', 'payment_status', 'id']);
    t.index(['store_id', 'created_at', 'id']);
    t.index(['store_id', 'customer_id', 'id']);
  });

  await knex.schema.createTable('order_items', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.integer('order_id').notNullable().references('id').inTable('orders');
    t.integer('product_id').notNullable().references('id').inTable('products');
    t.string('name', 255).notNullable(); // the product's, when the order was placed
    t.string('sku', 64);
    t.integer('quantity').notNullable();
    t.bigInteger('unit_price_halalas').notNullable(); // the price when the order was placed
    t.bigInteger('total_halalas').notNullable();
    t.bigInteger('discount_share_halalas').notNullable(); // the line's share of the order discount (largest remainder)
    t.string('product_kind', 16).notNullable();
    t.integer('category_id').references('id').inTable('categories'); // when the order was placed, for the analytics
    t.index(['store_id', 'order_id', 'id']);
    t.index(['store_id', 'product_id', 'order_id']);
  });

  await knex.schema.createTable('payments', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.integer('order_id').notNullable().references('id').inTable('orders');
    t.string('method', 16).notNullable();
    t.string('status', 16).notNullable();
    t.bigInteger('amount_halalas').notNullable();
    t.string('card_brand', 16);
    t.string('card_last4', 4);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['store_id', 'id']);
    t.index(['store_id', 'order_id', 'id']);
    t.index(['store_id', 'status', 'id']);
    t.index(['store_id', 'method', 'id']);
    t.index(['store_id', 'created_at', 'id']);
  });

  await knex.schema.alterTable('digital_units', (t) => {
    t.integer('order_id').references('id').inTable('orders');
    t.integer('order_item_id').references('id').inTable('order_items');
    t.index(['store_id', 'order_id', 'id']);
  });

  await knex.schema.createTable('abandoned_carts', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.integer('customer_id').notNullable().references('id').inTable('customers');
    t.bigInteger('subtotal_halalas').notNullable();
    t.bigInteger('total_halalas').notNullable();
    t.string('checkout_url', 2048).notNullable();
    t.integer('recovered_order_id').references('id').inTable('orders');
    t.integer('resource_version').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['store_id', 'id']);
    t.index(['store_id', 'created_at', 'id']);
    t.index(['store_id', 'recovered_order_id', 'id']);
  });

  await knex.schema.createTable('abandoned_cart_items', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.integer('cart_id').notNullable().references('id').inTable('abandoned_carts');
    t.integer('product_id').notNullable().references('id').inTable('products');
    t.string('name', 255).notNullable();
    t.integer('quantity').notNullable();
    t.bigInteger('unit_price_halalas').notNullable();
    t.bigInteger('total_halalas').notNullable();
    t.index(['store_id', 'cart_id', 'id']);
  });

  await knex.schema.createTable('reviews', (t) => {
    t.increments('id').primary();
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.integer('product_id').notNullable().references('id').inTable('products');
    t.integer('order_id').notNullable().references('id').inTable('orders');
    t.integer('customer_id').notNullable().references('id').inTable('customers');
    t.integer('rating').notNullable();
    t.text('content').notNullable();
    t.string('status', 16).notNullable().defaultTo('pending');
    t.bigInteger('moderated_at');
    t.integer('resource_version').notNullable().defaultTo(1);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['store_id', 'order_id', 'product_id']); // one review of a product per order
    t.index(['store_id', 'id']);
    t.index(['store_id', 'status', 'id']);
    t.index(['store_id', 'product_id', 'id']);
    t.index(['store_id', 'rating', 'id']);
  });

  await knex.schema.createTable('daily_sales', (t) => {
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('day', 10).notNullable();
    t.bigInteger('gross_halalas').notNullable().defaultTo(0);
    t.bigInteger('discount_halalas').notNullable().defaultTo(0);
    t.bigInteger('tax_halalas').notNullable().defaultTo(0);
    t.bigInteger('shipping_halalas').notNullable().defaultTo(0);
    t.integer('orders_count').notNullable().defaultTo(0);
    t.integer('items_sold').notNullable().defaultTo(0);
    t.primary(['store_id', 'day']);
  });

  // Distinct customers over a range cannot be summed from days: one row per customer and day.
  await knex.schema.createTable('daily_customer_sales', (t) => {
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('day', 10).notNullable();
    t.integer('customer_id').notNullable().references('id').inTable('customers');
    t.integer('orders_count').notNullable().defaultTo(0);
    t.primary(['store_id', 'day', 'customer_id']);
  });

  await knex.schema.createTable('daily_product_sales', (t) => {
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('day', 10).notNullable();
    t.integer('product_id').notNullable().references('id').inTable('products');
    t.integer('quantity').notNullable().defaultTo(0);
    t.integer('orders_count').notNullable().defaultTo(0);
    t.bigInteger('net_halalas').notNullable().defaultTo(0);
    t.primary(['store_id', 'day', 'product_id']);
  });

  await knex.schema.createTable('daily_category_sales', (t) => {
    t.uuid('store_id').notNullable().references('id').inTable('stores');
    t.string('day', 10).notNullable();
    t.integer('category_key').notNullable(); // the category's id, 0 for uncategorised lines (a key column cannot be null)
    t.integer('quantity').notNullable().defaultTo(0);
    t.integer('orders_count').notNullable().defaultTo(0);
    t.bigInteger('net_halalas').notNullable().defaultTo(0);
    t.primary(['store_id', 'day', 'category_key']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'daily_category_sales',
    'daily_product_sales',
    'daily_customer_sales',
    'daily_sales',
    'reviews',
    'abandoned_cart_items',
    'abandoned_carts',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
  await knex.schema.alterTable('digital_units', (t) => {
    t.dropIndex(['store_id', 'order_id', 'id']);
    t.dropForeign(['order_item_id']);
    t.dropForeign(['order_id']);
    t.dropColumn('order_item_id');
    t.dropColumn('order_id');
  });
  for (const table of ['payments', 'order_items', 'orders', 'coupons', 'customers']) await knex.schema.dropTableIfExists(table);
}
