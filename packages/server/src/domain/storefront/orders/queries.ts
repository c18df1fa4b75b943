import type { Db } from '../../../db/transactions';
import type { VersionedResource } from '../../common/versioned';
import { requireCustomer } from '../customers/queries';
import { type Order, type OrderItemRow, type OrderRow, orderNotFound, referenceTaken } from './row';
import { orderView } from './view';

/** The store's order; undefined when absent or another store's. */
export async function findOrder(db: Db, storeId: string, id: number): Promise<OrderRow | undefined> {
  return (await db<OrderRow>('orders').where({ store_id: storeId, id }).first()) as OrderRow | undefined;
}

/** Orders on the write path: the `(store_id, reference)` index refuses a reference the store already has. */
export const orderResource: VersionedResource<OrderRow> = {
  table: 'orders',
  find: findOrder,
  notFound: orderNotFound,
  uniqueConflict: (index) => (index.includes('reference') ? referenceTaken() : undefined),
};

/** The order's lines, by id (the order they were placed in). */
export async function orderItemsOf(db: Db, storeId: string, orderId: number): Promise<OrderItemRow[]> {
  return (await db<OrderItemRow>('order_items').where({ store_id: storeId, order_id: orderId }).orderBy('id')) as OrderItemRow[];
}

/** The order as the interface shows it (its events carry this). */
export async function orderOf(db: Db, row: OrderRow): Promise<Order> {
  const items = await orderItemsOf(db, row.store_id, row.id);
  return orderView(row, items, await requireCustomer(db, row.store_id, row.customer_id));
}

/** The order as the interface shows it, or 404 (another store's too). */
export async function getOrder(db: Db, storeId: string, id: number): Promise<Order> {
  const row = await findOrder(db, storeId, id);
  if (!row) throw orderNotFound();
  return orderOf(db, row);
}
