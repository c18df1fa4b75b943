import type { Knex } from 'knex';
import type { Clock } from '../../../core/clock';
import { selectRows } from '../../../db/reads';
import type { Db } from '../../../db/transactions';
import { keptForVersion } from '../../../db/version-kept';
import { type AnalyticsRange, analyticsRangeOf, type RangeQuery } from './range';
import {
  type AnalyticsOverview,
  type AnalyticsReport,
  analyticsMetaOf,
  type CategorySales,
  categorySalesView,
  type LineSums,
  overviewView,
  type ProductSales,
  productSalesView,
  type SalesPoint,
  type SalesSums,
  salesPointsView,
} from './view';

/*
 * The four reports read only the daily rollups (orders/rollups.ts), never orders: what they cost
 * grows with the days of the range and the products sold in it, not with the number of orders.
 * Every figure is an integer sum; PostgreSQL answers `sum(bigint)` as a numeric string, hence Number().
 */

/** The most products `analytics.products` lists (the spec's `maxItems`). */
export const PRODUCT_SALES_MAX = 100;
/** The most categories `analytics.categories` lists (the spec's `maxItems`). */
export const CATEGORY_SALES_MAX = 1000;

/** The category key the rollups give lines without a category (a key column cannot be null). */
const UNCATEGORISED_KEY = 0;

/** The rollup rows of one store inside the range. */
const inRange = (db: Db, table: string, storeId: string, range: AnalyticsRange): Knex.QueryBuilder =>
  db(`${table} as s`).where('s.store_id', storeId).whereBetween('s.day', [range.from, range.to]);

interface SalesRow {
  gross: unknown;
  discounts: unknown;
  tax: unknown;
  shipping: unknown;
  counted_orders: unknown;
  items_sold: unknown;
}

const SALES_SUMS = [
  'coalesce(sum(s.gross_halalas), 0) as gross',
  'coalesce(sum(s.discount_halalas), 0) as discounts',
  'coalesce(sum(s.tax_halalas), 0) as tax',
  'coalesce(sum(s.shipping_halalas), 0) as shipping',
  'coalesce(sum(s.orders_count), 0) as counted_orders',
  'coalesce(sum(s.items_sold), 0) as items_sold',
];

const salesSumsOf = (row: SalesRow | undefined): SalesSums => ({
  gross: Number(row?.gross ?? 0),
  discounts: Number(row?.discounts ?? 0),
  tax: Number(row?.tax ?? 0),
  shipping: Number(row?.shipping ?? 0),
  orders: Number(row?.counted_orders ?? 0),
  itemsSold: Number(row?.items_sold ?? 0),
});

interface LineSalesRow {
  items_sold: unknown;
  counted_orders: unknown;
  net: unknown;
}

/** An order counts on one day only, so summing the days' order counts counts each order once. */
const LINE_SUMS = ['sum(s.quantity) as items_sold', 'sum(s.orders_count) as counted_orders', 'sum(s.net_halalas) as net'];
/** Largest net sales first; the tie order is each report's. */
const NET_DESCENDING = 'sum(s.net_halalas) desc';

const lineSumsOf = (row: LineSalesRow): LineSums => ({ itemsSold: Number(row.items_sold), orders: Number(row.counted_orders), net: Number(row.net) });

/** Builds a report over the checked range: 400 VALIDATION_FAILED before any read when the range is not one. */
async function report<T>(query: RangeQuery, clock: Clock, read: (range: AnalyticsRange) => Promise<T>): Promise<AnalyticsReport<T>> {
  const range = analyticsRangeOf(query);
  const data = await read(range);
  return { data, meta: analyticsMetaOf(range, clock.now()) };
}

/** The store's rollup version (orders/rollups.ts raises it with every change of the rollups); 0 before the first. */
async function rollupVersionOf(db: Db, storeId: string): Promise<number> {
  const [row] = await selectRows<{ version: number | string }>(db, 'select version from store_rollup_versions where store_id = ?', [storeId]);
  return Number(row?.version ?? 0);
}

/**
 * `analytics.overview`: the range's totals, and its distinct customers (one rollup row per customer
 * and day). The count grows with the customer-days of the range (~12 ms for 90,000 in SQLite), so
 * the answer is kept per range until the store's rollups change (docs/performance.md): a dashboard
 * asking again pays one indexed read. The other reports cost little, or show current product and
 * category names, which the rollup version does not follow.
 */
export function salesOverview(db: Db, storeId: string, query: RangeQuery, clock: Clock): Promise<AnalyticsReport<AnalyticsOverview>> {
  return report(query, clock, async (range) => {
    const version = await rollupVersionOf(db, storeId);
    return keptForVersion(db, `analytics.overview|${storeId}|${range.from}|${range.to}`, version, async () => {
      const [sums] = (await inRange(db, 'daily_sales', storeId, range).select(db.raw(SALES_SUMS.join(', ')))) as SalesRow[];
      const [customers] = (await inRange(db, 'daily_customer_sales', storeId, range).select(db.raw('count(distinct s.customer_id) as customers'))) as Array<{
        customers: unknown;
      }>;
      return overviewView(salesSumsOf(sums), Number(customers?.customers ?? 0));
    });
  });
}

/** `analytics.sales`: one point per day of the range, zero-filled. */
export function dailySales(db: Db, storeId: string, query: RangeQuery, clock: Clock): Promise<AnalyticsReport<SalesPoint[]>> {
  return report(query, clock, async (range) => {
    const rows = (await inRange(db, 'daily_sales', storeId, range)
      .groupBy('s.day')
      .select('s.day', db.raw(SALES_SUMS.join(', ')))) as Array<SalesRow & { day: string }>;
    return salesPointsView(range, new Map(rows.map((row) => [row.day, salesSumsOf(row)])));
  });
}

/** `analytics.products`: the PRODUCT_SALES_MAX best sellers by net sales, ties by product id, with each product's current name. */
export function salesByProduct(db: Db, storeId: string, query: RangeQuery, clock: Clock): Promise<AnalyticsReport<ProductSales[]>> {
  return report(query, clock, async (range) => {
    const rows = (await inRange(db, 'daily_product_sales', storeId, range)
      .join('products as p', (on) => on.on('p.id', 's.product_id').andOn('p.store_id', 's.store_id'))
      .groupBy('s.product_id', 'p.name')
      .select('s.product_id', 'p.name', db.raw(LINE_SUMS.join(', ')))
      .orderByRaw(`${NET_DESCENDING}, s.product_id`)
      .limit(PRODUCT_SALES_MAX)) as Array<LineSalesRow & { product_id: number; name: string }>;
    return rows.map((row) => productSalesView(Number(row.product_id), row.name, lineSumsOf(row)));
  });
}

/**
 * `analytics.categories`: every category with a counted line (the category the line had when
 * ordered), by net sales, ties by category id, the uncategorised lines after the categories they tie with.
 */
export function salesByCategory(db: Db, storeId: string, query: RangeQuery, clock: Clock): Promise<AnalyticsReport<CategorySales[]>> {
  return report(query, clock, async (range) => {
    const rows = (await inRange(db, 'daily_category_sales', storeId, range)
      .leftJoin('categories as c', (on) => on.on('c.id', 's.category_key').andOn('c.store_id', 's.store_id'))
      .groupBy('s.category_key', 'c.name')
      .select('s.category_key', 'c.name', db.raw(LINE_SUMS.join(', ')))
      .orderByRaw(`${NET_DESCENDING}, case when s.category_key = ${UNCATEGORISED_KEY} then 1 else 0 end, s.category_key`)
      .limit(CATEGORY_SALES_MAX)) as Array<LineSalesRow & { category_key: number; name: string | null }>;
    return rows.map((row) => {
      const key = Number(row.category_key);
      if (key === UNCATEGORISED_KEY) return categorySalesView(null, lineSumsOf(row));
      // Order lines hold their category by foreign key, so a category with sales always has its row.
      if (row.name === null) throw new Error(`Category ${key} of store ${storeId} has sales but no row`);
      return categorySalesView({ id: key, name: row.name }, lineSumsOf(row));
    });
  });
}
