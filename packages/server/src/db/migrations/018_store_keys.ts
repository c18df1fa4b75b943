import type { Knex } from 'knex';
import { forEngine } from '../engine';
import { addStoreIdFiller, fillerOf } from '../postgres/day-partitioning';
import type { PhaseMigration } from './phase';

/**
 * A schema ready to shard by store (docs/decisions/0079-keys-led-by-the-store.md): every store table's
 * primary key leads with `store_id`, and every foreign key between store tables carries it on both
 * sides, so that a database distributed by `store_id` (Citus) keeps a store's rows and their
 * references on one shard and a store's statements route to it.
 *
 * - `webhook_deliveries` gains `store_id`, its subscription's (filled here; written by the fan-out
 *   and replay from now on).
 * - PostgreSQL: the keys become `(store_id, id)` (`webhook_queues`: `(store_id, subscription_id)`);
 *   the `(store_id, id)` indexes they make redundant go; the foreign keys between store tables become
 *   composite. `webhook_attempts` (migration 019's to key) loses its reference to
 *   `webhook_subscriptions (id)`, which is no longer a key: it has no `store_id` to make it composite.
 * - SQLite keeps its keys: one file for one process, nothing shards it, and changing a key there is a
 *   copy of every table. It gets the column, and a unique index on `webhook_queues (store_id,
 *   subscription_id)` so that the queue's upsert names the same conflict target on both databases.
 *
 * One transaction: each re-keyed table is under ACCESS EXCLUSIVE from its ALTER to the commit (one
 * index build per table, one check per foreign key: time linear in rows; the decision gives the online form).
 * A cut run leaves nothing behind, on both databases.
 *
 * Expand, then contract (docs/decisions/0082-expand-then-contract.md): the previous release upserts
 * a webhook queue `on conflict (subscription_id)` and inserts deliveries without `store_id`. The
 * expand phase keeps a unique index on `webhook_queues (subscription_id)` beside the new key, and a
 * trigger that fills a delivery's `store_id` from its subscription when an insert leaves it out;
 * the contract phase drops both.
 */

/** The store tables whose key becomes `(store_id, <column>)` on PostgreSQL, with the `(store_id, id)` index it replaces. */
const REKEYED: ReadonlyArray<{ table: string; key: string; redundantIndex?: string }> = [
  { table: 'categories', key: 'id', redundantIndex: 'categories_store_id_id_index' },
  { table: 'products', key: 'id', redundantIndex: 'products_store_id_id_index' },
  { table: 'inventory_adjustments', key: 'id' },
  { table: 'digital_units', key: 'id' },
  { table: 'customers', key: 'id', redundantIndex: 'customers_store_id_id_index' },
  { table: 'coupons', key: 'id', redundantIndex: 'coupons_store_id_id_index' },
  { table: 'orders', key: 'id', redundantIndex: 'orders_store_id_id_index' },
  { table: 'order_items', key: 'id' },
  { table: 'payments', key: 'id', redundantIndex: 'payments_store_id_id_index' },
  { table: 'abandoned_carts', key: 'id', redundantIndex: 'abandoned_carts_store_id_id_index' },
  { table: 'abandoned_cart_items', key: 'id' },
  { table: 'reviews', key: 'id', redundantIndex: 'reviews_store_id_id_index' },
  { table: 'pages', key: 'id', redundantIndex: 'pages_store_id_id_index' },
  { table: 'webhook_subscriptions', key: 'id' },
  { table: 'webhook_deliveries', key: 'id' },
  { table: 'webhook_queues', key: 'subscription_id' },
];

/** The references between store tables: `table.column` → `target.id`, made composite with `store_id`. */
const REFERENCES: ReadonlyArray<{ table: string; column: string; target: string }> = [
  { table: 'categories', column: 'parent_id', target: 'categories' },
  { table: 'products', column: 'category_id', target: 'categories' },
  { table: 'inventory_adjustments', column: 'product_id', target: 'products' },
  { table: 'digital_units', column: 'product_id', target: 'products' },
  { table: 'digital_units', column: 'adjustment_id', target: 'inventory_adjustments' },
  { table: 'digital_units', column: 'order_id', target: 'orders' },
  { table: 'digital_units', column: 'order_item_id', target: 'order_items' },
  { table: 'orders', column: 'customer_id', target: 'customers' },
  { table: 'order_items', column: 'order_id', target: 'orders' },
  { table: 'order_items', column: 'product_id', target: 'products' },
  { table: 'order_items', column: 'category_id', target: 'categories' },
  { table: 'payments', column: 'order_id', target: 'orders' },
  { table: 'abandoned_carts', column: 'customer_id', target: 'customers' },
  { table: 'abandoned_carts', column: 'recovered_order_id', target: 'orders' },
  { table: 'abandoned_cart_items', column: 'cart_id', target: 'abandoned_carts' },
  { table: 'abandoned_cart_items', column: 'product_id', target: 'products' },
  { table: 'reviews', column: 'product_id', target: 'products' },
  { table: 'reviews', column: 'order_id', target: 'orders' },
  { table: 'reviews', column: 'customer_id', target: 'customers' },
  { table: 'daily_customer_sales', column: 'customer_id', target: 'customers' },
  { table: 'daily_product_sales', column: 'product_id', target: 'products' },
  { table: 'webhook_deliveries', column: 'subscription_id', target: 'webhook_subscriptions' },
  { table: 'webhook_queues', column: 'subscription_id', target: 'webhook_subscriptions' },
];

/** A reference whose table has no `store_id` yet (019 gives it one): dropped here, restored by `down`. */
const UNKEYED_REFERENCE = { table: 'webhook_attempts', column: 'subscription_id', target: 'webhook_subscriptions' };

const QUEUE_KEY_INDEX = 'webhook_queues_store_key_index';
/** What the previous release's queue upsert names as its conflict target (PostgreSQL), until the contract phase. */
const QUEUE_SUBSCRIPTION_UNIQUE = 'webhook_queues_subscription_id_unique';
const DELIVERY_STORE = { table: 'webhook_subscriptions', via: 'subscription_id' } as const;

const foreignKeyName = (table: string, column: string) => `${table}_${column}_foreign`;
const primaryKeyName = (table: string) => `${table}_pkey`;

export async function up(knex: Knex): Promise<void> {
  await addDeliveryStore(knex);
  await forEngine(knex, { postgres: rekeyPostgres, sqlite: matchQueueKeyOnSqlite })(knex);
}

export async function down(knex: Knex): Promise<void> {
  await forEngine(knex, { postgres: unkeyPostgres, sqlite: unmatchQueueKeyOnSqlite })(knex);
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('store_id');
  });
}

/** Each delivery's store is its subscription's (a delivery never outlives its subscription: the reference holds it). */
async function addDeliveryStore(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.uuid('store_id');
  });
  await knex.raw(
    `update webhook_deliveries set store_id =
       (select s.store_id from webhook_subscriptions s where s.id = webhook_deliveries.subscription_id)`,
  );
}

/** The phase that removes what the previous release needs (db/migrate.ts runs it apart). */
export const contract: PhaseMigration = {
  up: (knex) => forEngine(knex, { postgres: contractOnPostgres, sqlite: async () => undefined })(knex),
  down: (knex) => forEngine(knex, { postgres: uncontractOnPostgres, sqlite: async () => undefined })(knex),
};

async function contractOnPostgres(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists ??', [QUEUE_SUBSCRIPTION_UNIQUE]);
  await knex.raw('drop trigger if exists ?? on webhook_deliveries', [fillerOf('webhook_deliveries')]);
  await knex.raw('drop function if exists ??()', [fillerOf('webhook_deliveries')]);
}

async function uncontractOnPostgres(knex: Knex): Promise<void> {
  await knex.raw('create unique index if not exists ?? on webhook_queues (subscription_id)', [QUEUE_SUBSCRIPTION_UNIQUE]);
  await addStoreIdFiller(knex, 'webhook_deliveries', DELIVERY_STORE);
}

async function rekeyPostgres(knex: Knex): Promise<void> {
  await addStoreIdFiller(knex, 'webhook_deliveries', DELIVERY_STORE);
  await knex.raw('alter table webhook_deliveries alter column store_id set not null');
  await knex.raw('alter table ?? drop constraint if exists ??', [UNKEYED_REFERENCE.table, foreignKeyName(UNKEYED_REFERENCE.table, UNKEYED_REFERENCE.column)]);
  for (const { table, column } of REFERENCES) await knex.raw('alter table ?? drop constraint ??', [table, foreignKeyName(table, column)]);
  for (const { table, key, redundantIndex } of REKEYED) {
    await knex.raw('alter table ?? drop constraint ??, add constraint ?? primary key (store_id, ??)', [
      table,
      primaryKeyName(table),
      primaryKeyName(table),
      key,
    ]);
    if (redundantIndex) await knex.raw('drop index ??', [redundantIndex]);
  }
  for (const { table, column, target } of REFERENCES) {
    await knex.raw('alter table ?? add constraint ?? foreign key (store_id, ??) references ?? (store_id, id)', [
      table,
      foreignKeyName(table, column),
      column,
      target,
    ]);
  }
  await knex.raw('create unique index ?? on webhook_queues (subscription_id)', [QUEUE_SUBSCRIPTION_UNIQUE]);
}

async function unkeyPostgres(knex: Knex): Promise<void> {
  await contractOnPostgres(knex);
  for (const { table, column } of REFERENCES) await knex.raw('alter table ?? drop constraint ??', [table, foreignKeyName(table, column)]);
  for (const { table, key, redundantIndex } of REKEYED) {
    await knex.raw('alter table ?? drop constraint ??, add constraint ?? primary key (??)', [table, primaryKeyName(table), primaryKeyName(table), key]);
    if (redundantIndex) await knex.raw('create index ?? on ?? (store_id, id)', [redundantIndex, table]);
  }
  for (const { table, column, target } of [...REFERENCES, UNKEYED_REFERENCE]) {
    await knex.raw('alter table ?? add constraint ?? foreign key (??) references ?? (id)', [table, foreignKeyName(table, column), column, target]);
  }
}

async function matchQueueKeyOnSqlite(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_queues', (t) => {
    t.unique(['store_id', 'subscription_id'], { indexName: QUEUE_KEY_INDEX });
  });
}

async function unmatchQueueKeyOnSqlite(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_queues', (t) => {
    t.dropUnique(['store_id', 'subscription_id'], QUEUE_KEY_INDEX);
  });
}
