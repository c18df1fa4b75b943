import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import { fromHalalas } from '../../../core/money';
import { divideHalfUp } from '../pricing';
import type { AnalyticsRange } from './range';

export type AnalyticsOverview = components['schemas']['AnalyticsOverview'];
export type SalesPoint = components['schemas']['SalesPoint'];
export type ProductSales = components['schemas']['ProductSales'];
export type CategorySales = components['schemas']['CategorySales'];
/** The analytics meta but the request id, which the HTTP edge adds. */
export type AnalyticsReportMeta = Omit<components['schemas']['AnalyticsMeta'], 'request_id'>;

/** A report with the range and units its figures are in. */
export interface AnalyticsReport<T> {
  data: T;
  meta: AnalyticsReportMeta;
}

/** The zone whose calendar days the rollups are kept in (`riyadhDay`): every day of a report starts at midnight there. */
export const ANALYTICS_TIMEZONE = 'Asia/Riyadh';

/** The sums of counted orders over some days, money in halalas. */
export interface SalesSums {
  gross: number;
  discounts: number;
  tax: number;
  shipping: number;
  orders: number;
  itemsSold: number;
}

export const NO_SALES: SalesSums = { gross: 0, discounts: 0, tax: 0, shipping: 0, orders: 0, itemsSold: 0 };

/** What a product or a category sold over some days, money in halalas. */
export interface LineSums {
  itemsSold: number;
  orders: number;
  net: number;
}

const netOf = (sums: SalesSums) => sums.gross - sums.discounts;
const totalOf = (sums: SalesSums) => netOf(sums) + sums.tax + sums.shipping;

export function overviewView(sums: SalesSums, customers: number): AnalyticsOverview {
  return {
    gross_sales: fromHalalas(sums.gross),
    discounts: fromHalalas(sums.discounts),
    net_sales: fromHalalas(netOf(sums)),
    tax: fromHalalas(sums.tax),
    shipping: fromHalalas(sums.shipping),
    total_sales: fromHalalas(totalOf(sums)),
    orders_count: sums.orders,
    average_order_value: fromHalalas(sums.orders === 0 ? 0 : divideHalfUp(netOf(sums), sums.orders)),
    items_sold: sums.itemsSold,
    customers,
  };
}

/** One point for every day of the range, oldest first; a day no counted order fell on is all zeros. */
export function salesPointsView(range: AnalyticsRange, byDay: ReadonlyMap<string, SalesSums>): SalesPoint[] {
  return range.days.map((date) => {
    const sums = byDay.get(date) ?? NO_SALES;
    return {
      date,
      orders_count: sums.orders,
      items_sold: sums.itemsSold,
      gross_sales: fromHalalas(sums.gross),
      discounts: fromHalalas(sums.discounts),
      net_sales: fromHalalas(netOf(sums)),
      total_sales: fromHalalas(totalOf(sums)),
    };
  });
}

export function productSalesView(productId: number, name: string, sums: LineSums): ProductSales {
  return { product_id: productId, name, items_sold: sums.itemsSold, orders_count: sums.orders, net_sales: fromHalalas(sums.net) };
}

/** `category` null: the lines of products that had no category when ordered. */
export function categorySalesView(category: { id: number; name: string } | null, sums: LineSums): CategorySales {
  return {
    category_id: category?.id ?? null,
    category: category?.name ?? null,
    items_sold: sums.itemsSold,
    orders_count: sums.orders,
    net_sales: fromHalalas(sums.net),
  };
}

export function analyticsMetaOf(range: AnalyticsRange, generatedAt: number): AnalyticsReportMeta {
  return { from: range.from, to: range.to, timezone: ANALYTICS_TIMEZONE, currency: 'SAR', generated_at: toIso(generatedAt) };
}
