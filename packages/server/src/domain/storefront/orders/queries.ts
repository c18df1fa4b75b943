import { ApiError } from '../../../core/errors';
import type { Reader } from '../../../core/field-scopes';
import { parseDateTimeFilter } from '../../../core/instants';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, syncWalkOf, walkOrder } from '../../../core/paging';
import { groupedBy } from '../../../core/records';
import { placeholdersFor, SqlConditions, selectRows } from '../../../db/reads';
import type { Db } from '../../../db/transactions';
import type { VersionedResource } from '../../common/versioned';
import { customersOfRows } from '../customers/queries';
import {
  type DigitalItem,
  type DigitalUnitRow,
  type Order,
  type OrderItemRow,
  type OrderPaymentStatus,
  type OrderRow,
  type OrderStatus,
  orderNotFound,
  referenceTaken,
} from './row';
import { digitalItemView, orderView } from './view';

/** The most digital items one answer holds: the spec's `maxItems` of the unpaged list. */
const DIGITAL_ITEMS_MAX = 500;

/**
 * Orders, their lines and customers are read as plain SQL (docs/decisions/0029-hot-reads.md):
 * a page of orders is three reads, and building them with knex cost more than running them.
 */
const ORDER_SQL = 'select * from orders where store_id = ? and id = ?';
const ORDER_ITEMS_SQL = 'select * from order_items where store_id = ? and order_id = ? order by id asc';

/** The store's order; undefined when absent or another store's. */
export async function findOrder(db: Db, storeId: string, id: number): Promise<OrderRow | undefined> {
  const [row] = await selectRows<OrderRow>(db, ORDER_SQL, [storeId, id]);
  return row;
}

/** Orders on the write path: the `(store_id, reference)` index refuses a reference the store already has. */
export const orderResource: VersionedResource<OrderRow> = {
  table: 'orders',
  find: findOrder,
  notFound: orderNotFound,
  uniqueConflict: (index) => (index.includes('reference') ? referenceTaken() : undefined),
};

/** The order's lines, by id (the order they were placed in). */
export function orderItemsOf(db: Db, storeId: string, orderId: number): Promise<readonly OrderItemRow[]> {
  return selectRows<OrderItemRow>(db, ORDER_ITEMS_SQL, [storeId, orderId]);
}

/**
 * The order as the interface shows it. Its events carry it with the customer's contact details, as
 * slice 1 wrote them; reads pass whether the token may see them.
 */
export async function orderOf(db: Db, row: OrderRow, reader: Reader = 'everything'): Promise<Order> {
  const [order] = await ordersView(db, row.store_id, [row], reader);
  if (!order) throw new Error(`Order ${row.id} has no view`);
  return order;
}

/** The store's order, or 404 (another store's too: no existence oracle). */
async function requireOrder(db: Db, storeId: string, id: number): Promise<OrderRow> {
  const row = await findOrder(db, storeId, id);
  if (!row) throw orderNotFound();
  return row;
}

/** The order as the interface shows it, or 404 (another store's too). */
export async function getOrder(db: Db, storeId: string, id: number, reader: Reader = 'everything'): Promise<Order> {
  return orderOf(db, await requireOrder(db, storeId, id), reader);
}

export interface OrderFilters {
  status?: OrderStatus | undefined;
  payment_status?: OrderPaymentStatus | undefined;
  /** Only orders placed at or after this instant (RFC 3339, as the request gave it). */
  created_from?: string | undefined;
  /** Only orders placed at or before this instant (RFC 3339, as the request gave it). */
  created_to?: string | undefined;
  /** Only orders with `updated_at` after this instant (RFC 3339, as the request gave it); the walk is then by `(updated_at, id)`. */
  updated_since?: string | undefined;
}

/** The created range as epoch ms; 400 INVALID_FILTER when a bound is no instant or the range is backwards. */
function createdRangeOf(filters: OrderFilters): { from?: number; to?: number } {
  const from = filters.created_from === undefined ? undefined : parseDateTimeFilter('created_from', filters.created_from);
  const to = filters.created_to === undefined ? undefined : parseDateTimeFilter('created_to', filters.created_to);
  if (from !== undefined && to !== undefined && from > to) {
    throw new ApiError('INVALID_FILTER', "The filter 'created_from' is after 'created_to'.", {
      details: [{ location: 'query', field: 'created_from', message: 'is after created_to' }],
    });
  }
  return { ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) };
}

/** The lines of these orders, grouped by order (each group in id order). */
async function itemsByOrder(db: Db, storeId: string, orderIds: readonly number[]): Promise<Map<number, OrderItemRow[]>> {
  const sql = `select * from order_items where store_id = ? and order_id in ${placeholdersFor(orderIds)} order by id asc`;
  const rows = await selectRows<OrderItemRow>(db, sql, [storeId, ...orderIds]);
  return groupedBy(rows, (row) => Number(row.order_id));
}

/** Orders with their lines and customers: two reads a page, whatever its size. */
async function ordersView(db: Db, storeId: string, rows: readonly OrderRow[], reader: Reader): Promise<Order[]> {
  if (rows.length === 0) return [];
  const [items, customerOf] = await Promise.all([
    itemsByOrder(
      db,
      storeId,
      rows.map((row) => Number(row.id)),
    ),
    customersOfRows(db, storeId, rows, 'Order'),
  ]);
  return rows.map((row) => orderView(row, items.get(Number(row.id)) ?? [], customerOf(row), reader));
}

/**
 * One keyset page of the store's orders by id (given `updated_since`, by `updated_at` and id),
 * filtered (AND); the filters are sealed in the cursor. Each filter has its `(store_id, column, id)`
 * index.
 */
export function listOrders(db: Db, storeId: string, filters: OrderFilters, reader: Reader, request: ListRequest): Promise<Page<Order>> {
  const created = createdRangeOf(filters);
  const { walk, updatedAfter } = syncWalkOf(filters.updated_since);
  const read = (after: KeysetAfter | undefined, take: number) => {
    const where = new SqlConditions(storeId);
    if (filters.status !== undefined) where.and('status = ?', filters.status);
    if (filters.payment_status !== undefined) where.and('payment_status = ?', filters.payment_status);
    if (created.from !== undefined) where.and('created_at >= ?', created.from);
    if (created.to !== undefined) where.and('created_at <= ?', created.to);
    if (updatedAfter !== undefined) where.and('updated_at > ?', updatedAfter);
    if (after !== undefined) where.bound(boundAfter(walk, after));
    return selectRows<OrderRow>(db, `select * from orders where store_id = ?${where.sql} order by ${walkOrder(walk)} limit ?`, [...where.params, take]);
  };
  return keysetPage(request, { list: 'orders.list', storeId, filters: { ...filters } }, walk, read, (rows) => ordersView(db, storeId, rows, reader));
}

/**
 * The digital units delivered with the order's digital lines, by id; 404 for an order the store
 * does not have. Units only ever carry an order id once delivered with one of its lines.
 */
export async function digitalItemsOf(db: Db, storeId: string, orderId: number): Promise<DigitalItem[]> {
  await requireOrder(db, storeId, orderId);
  const rows = (await db('digital_units')
    .where({ store_id: storeId, order_id: orderId })
    .whereNotNull('delivered_at')
    .orderBy('id')
    .limit(DIGITAL_ITEMS_MAX)
    .select('id', 'product_id', 'code', 'order_id', 'order_item_id', 'delivered_at')) as DigitalUnitRow[];
  return rows.map(digitalItemView);
}
