import type { Reader } from '../../../core/field-scopes';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, syncWalkOf, walkOrder } from '../../../core/paging';
import { groupedBy } from '../../../core/records';
import type { Db } from '../../../db/transactions';
import type { VersionedResource } from '../../common/versioned';
import { customersOfRows } from '../customers/queries';
import { type AbandonedCart, type CartItemRow, type CartRow, cartNotFound } from './row';
import { cartView } from './view';

export async function findCart(db: Db, storeId: string, id: number): Promise<CartRow | undefined> {
  return (await db<CartRow>('abandoned_carts').where({ store_id: storeId, id }).first()) as CartRow | undefined;
}

export const cartResource: VersionedResource<CartRow> = { table: 'abandoned_carts', find: findCart, notFound: cartNotFound };

export async function cartItemsOf(db: Db, storeId: string, cartId: number): Promise<CartItemRow[]> {
  return (await db<CartItemRow>('abandoned_cart_items').where({ store_id: storeId, cart_id: cartId }).orderBy('id')) as CartItemRow[];
}

/** What a cart's view depends on besides its row: whether the reader may see contact details, and when it reads. */
export interface CartReading {
  reader: Reader;
  now: number;
}

/** Carts with their lines and customers: two reads a page, whatever its size. */
async function cartsView(db: Db, storeId: string, rows: readonly CartRow[], reading: CartReading): Promise<AbandonedCart[]> {
  if (rows.length === 0) return [];
  const cartIds = rows.map((row) => Number(row.id));
  const [itemRows, customerOf] = await Promise.all([
    db<CartItemRow>('abandoned_cart_items').where({ store_id: storeId }).whereIn('cart_id', cartIds).orderBy('id') as Promise<CartItemRow[]>,
    customersOfRows(db, storeId, rows, 'Cart'),
  ]);
  const items = groupedBy(itemRows, (item) => Number(item.cart_id));
  return rows.map((row) => cartView(row, items.get(Number(row.id)) ?? [], customerOf(row), reading.reader, reading.now));
}

async function oneCartView(db: Db, row: CartRow, reading: CartReading): Promise<AbandonedCart> {
  const [cart] = await cartsView(db, row.store_id, [row], reading);
  if (!cart) throw new Error(`Cart ${row.id} has no view`);
  return cart;
}

/** The cart as the interface shows it at `now`, with contact details (its events carry this). */
export function cartOf(db: Db, row: CartRow, now: number): Promise<AbandonedCart> {
  return oneCartView(db, row, { reader: 'everything', now });
}

/** The store's cart as the interface shows it, or 404 (another store's too: no existence oracle). */
export async function getCart(db: Db, storeId: string, id: number, reading: CartReading): Promise<AbandonedCart> {
  const row = await findCart(db, storeId, id);
  if (!row) throw cartNotFound();
  return oneCartView(db, row, reading);
}

/** The filters of `abandoned_carts.list`, as the request gives them. */
export interface CartFilters {
  /** Only carts with `updated_at` after this instant (RFC 3339); the walk is then by `(updated_at, id)`. */
  updated_since?: string | undefined;
}

/**
 * `abandoned_carts.list`: one keyset page of the store's carts by ascending id, recovered ones
 * included, on the `(store_id, id)` index; given `updated_since`, by `updated_at` and id on the
 * `(store_id, updated_at, id)` index.
 */
export function listCarts(db: Db, storeId: string, filters: CartFilters, reading: CartReading, request: ListRequest): Promise<Page<AbandonedCart>> {
  const { walk, updatedAfter } = syncWalkOf(filters.updated_since);
  const read = (after: KeysetAfter | undefined, take: number) => {
    let query = db<CartRow>('abandoned_carts').where({ store_id: storeId });
    if (updatedAfter !== undefined) query = query.where('updated_at', '>', updatedAfter);
    if (after !== undefined) query = query.whereRaw(...boundAfter(walk, after));
    return query.orderByRaw(walkOrder(walk)).limit(take) as Promise<CartRow[]>;
  };
  const scope = { list: 'abandoned_carts.list', storeId, filters: { ...filters } };
  return keysetPage(request, scope, walk, read, (rows) => cartsView(db, storeId, rows, reading));
}
