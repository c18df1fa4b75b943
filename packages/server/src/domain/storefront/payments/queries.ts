import { rowIdOf } from '../../../core/ids';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, syncWalkOf, walkOrder } from '../../../core/paging';
import { SqlConditions, selectRows } from '../../../db/reads';
import type { Db } from '../../../db/transactions';
import { type Payment, type PaymentMethod, type PaymentRow, paymentNotFound } from './row';
import { paymentView } from './view';

const PAYMENT_SQL = 'select * from payments where store_id = ? and id = ?';

/** The store's payment, or 404 (another store's too: no existence oracle). */
export async function getPayment(db: Db, storeId: string, id: number): Promise<Payment> {
  const [row] = await selectRows<PaymentRow>(db, PAYMENT_SQL, [storeId, id]);
  if (!row) throw paymentNotFound();
  return paymentView(row);
}

/** The filters of `payments.list`, as the request gives them (the spec validator has checked their form). */
export interface PaymentFilters {
  status?: PaymentRow['status'] | undefined;
  method?: PaymentMethod | undefined;
  /** The order's id as text (`^[1-9][0-9]*$`, up to 15 digits). */
  order_id?: string | undefined;
  /** Only payments with `updated_at` after this instant (RFC 3339); the walk is then by `(updated_at, id)`. */
  updated_since?: string | undefined;
}

/**
 * `payments.list`: one keyset page of the store's payments matching every filter, by ascending id
 * (given `updated_since`, by `updated_at` and id). Each filter has its `(store_id, …, id)` index,
 * never OFFSET.
 */
export function listPayments(db: Db, storeId: string, filters: PaymentFilters, request: ListRequest): Promise<Page<Payment>> {
  // An order id beyond the id range names no order, so it has no payments: an empty page, as the spec says of any such id.
  const orderId = filters.order_id === undefined ? undefined : (rowIdOf(filters.order_id) ?? null);
  const { walk, updatedAfter } = syncWalkOf(filters.updated_since);
  const read = async (after: KeysetAfter | undefined, take: number): Promise<readonly PaymentRow[]> => {
    if (orderId === null) return [];
    const where = new SqlConditions(storeId);
    if (filters.status !== undefined) where.and('status = ?', filters.status);
    if (filters.method !== undefined) where.and('method = ?', filters.method);
    if (orderId !== undefined) where.and('order_id = ?', orderId);
    if (updatedAfter !== undefined) where.and('updated_at > ?', updatedAfter);
    if (after !== undefined) where.bound(boundAfter(walk, after));
    return selectRows<PaymentRow>(db, `select * from payments where store_id = ?${where.sql} order by ${walkOrder(walk)} limit ?`, [...where.params, take]);
  };
  return keysetPage(request, { list: 'payments.list', storeId, filters: { ...filters } }, walk, read, (rows) => rows.map(paymentView));
}
