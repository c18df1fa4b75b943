import { placeholdersFor, selectRows } from '../../../db/reads';
import type { Db } from '../../../db/transactions';
import { type CustomerRow, customerNotFound } from './row';

/** The store's customer; undefined when absent or another store's. */
export async function findCustomer(db: Db, storeId: string, id: number): Promise<CustomerRow | undefined> {
  return (await db<CustomerRow>('customers').where({ store_id: storeId, id }).first()) as CustomerRow | undefined;
}

/** The store's customer, or 422 CUSTOMER_NOT_FOUND (another store's too). */
export async function requireCustomer(db: Db, storeId: string, id: number): Promise<CustomerRow> {
  const customer = await findCustomer(db, storeId, id);
  if (!customer) throw customerNotFound();
  return customer;
}

/**
 * The customers of a page of rows (orders, carts, reviews), read at once: the answer gives each row
 * its customer. A row whose customer is not in its store breaks an invariant of the schema (an error,
 * not a 404).
 */
export async function customersOfRows<Row extends { readonly id: number; readonly customer_id: number }>(
  db: Db,
  storeId: string,
  rows: readonly Row[],
  noun: string,
): Promise<(row: Row) => Readonly<CustomerRow>> {
  const distinct = [...new Set(rows.map((row) => Number(row.customer_id)))];
  const found =
    distinct.length === 0
      ? []
      : await selectRows<CustomerRow>(db, `select * from customers where store_id = ? and id in ${placeholdersFor(distinct)}`, [storeId, ...distinct]);
  const byId = new Map(found.map((customer) => [Number(customer.id), customer]));
  return (row) => {
    const customer = byId.get(Number(row.customer_id));
    if (!customer) throw new Error(`${noun} ${row.id} has no customer ${row.customer_id} in its store`);
    return customer;
  };
}
