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

/** The store's customers with these ids, by id. */
export async function customersById(db: Db, storeId: string, ids: readonly number[]): Promise<Map<number, Readonly<CustomerRow>>> {
  if (ids.length === 0) return new Map();
  const distinct = [...new Set(ids)];
  const rows = await selectRows<CustomerRow>(db, `select * from customers where store_id = ? and id in ${placeholdersFor(distinct)}`, [storeId, ...distinct]);
  return new Map(rows.map((row) => [Number(row.id), row]));
}
