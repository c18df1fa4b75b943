import type { Knex } from 'knex';
import { riyadhDay } from '../pricing';
import type { OrderItemRow, OrderRow } from './row';

/*
 * The daily rollups the analytics read, kept in step with orders in the transaction that changes
 * them (docs/decisions/0037-storefront.md): an order counts on the Asia/Riyadh day of its
 * `created_at` unless it is cancelled, whatever its payment state; a refund is not subtracted.
 * Placing an order adds it (+1); cancelling it takes the same amounts away (−1).
 */

type Sign = 1 | -1;

/**
 * Adds `sign ×` each amount to the row with `key`, creating it at zero first (one upsert, both
 * databases). A row that no order counts in any more is removed, so a product, a category or a
 * customer is in a day's rollup only while a counted order holds it.
 */
async function addTo(trx: Knex.Transaction, table: string, key: Record<string, string | number>, amounts: Record<string, number>, sign: Sign): Promise<void> {
  const signed = Object.fromEntries(Object.entries(amounts).map(([column, amount]) => [column, sign * amount]));
  const merged = Object.fromEntries(Object.entries(signed).map(([column, amount]) => [column, trx.raw('?? + ?', [`${table}.${column}`, amount])]));
  await trx(table)
    .insert({ ...key, ...signed })
    .onConflict(Object.keys(key))
    .merge(merged);
  if (sign === -1) await trx(table).where(key).andWhere('orders_count', '<=', 0).delete();
}

/** Sums the lines by a key (a product, a category): quantity, net sales, and one order for each key. */
function sumLinesBy(items: readonly OrderItemRow[], keyOf: (item: OrderItemRow) => number): Map<number, { quantity: number; net_halalas: number }> {
  const sums = new Map<number, { quantity: number; net_halalas: number }>();
  for (const item of items) {
    const sum = sums.get(keyOf(item)) ?? { quantity: 0, net_halalas: 0 };
    sum.quantity += item.quantity;
    sum.net_halalas += Number(item.total_halalas) - Number(item.discount_share_halalas);
    sums.set(keyOf(item), sum);
  }
  return sums;
}

/** Adds (+1) or takes away (−1) an order's part of its day's rollups, and raises the store's rollup version. */
export async function countOrderInRollups(trx: Knex.Transaction, order: OrderRow, items: readonly OrderItemRow[], sign: Sign): Promise<void> {
  await trx('store_rollup_versions')
    .insert({ store_id: order.store_id, version: 1 })
    .onConflict('store_id')
    .merge({ version: trx.raw('?? + 1', ['store_rollup_versions.version']) });
  const base = { store_id: order.store_id, day: riyadhDay(Number(order.created_at)) };
  const gross = items.reduce((sum, item) => sum + Number(item.total_halalas), 0);
  const itemsSold = items.reduce((sum, item) => sum + item.quantity, 0);
  await addTo(
    trx,
    'daily_sales',
    base,
    {
      gross_halalas: gross,
      discount_halalas: Number(order.discount_halalas),
      tax_halalas: Number(order.tax_halalas),
      shipping_halalas: Number(order.shipping_halalas),
      orders_count: 1,
      items_sold: itemsSold,
    },
    sign,
  );
  await addTo(trx, 'daily_customer_sales', { ...base, customer_id: order.customer_id }, { orders_count: 1 }, sign);
  for (const [productId, sum] of sumLinesBy(items, (item) => item.product_id)) {
    await addTo(trx, 'daily_product_sales', { ...base, product_id: productId }, { ...sum, orders_count: 1 }, sign);
  }
  for (const [categoryKey, sum] of sumLinesBy(items, (item) => item.category_id ?? 0)) {
    await addTo(trx, 'daily_category_sales', { ...base, category_key: categoryKey }, { ...sum, orders_count: 1 }, sign);
  }
}
