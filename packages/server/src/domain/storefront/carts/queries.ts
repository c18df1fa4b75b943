import type { Db } from '../../../db/transactions';
import type { VersionedResource } from '../../common/versioned';
import { requireCustomer } from '../customers/queries';
import { type AbandonedCart, type CartItemRow, type CartRow, cartNotFound } from './row';
import { cartView } from './view';

export async function findCart(db: Db, storeId: string, id: number): Promise<CartRow | undefined> {
  return (await db<CartRow>('abandoned_carts').where({ store_id: storeId, id }).first()) as CartRow | undefined;
}

export const cartResource: VersionedResource<CartRow> = { table: 'abandoned_carts', find: findCart, notFound: cartNotFound };

export async function cartItemsOf(db: Db, storeId: string, cartId: number): Promise<CartItemRow[]> {
  return (await db<CartItemRow>('abandoned_cart_items').where({ store_id: storeId, cart_id: cartId }).orderBy('id')) as CartItemRow[];
}

/** The cart as the interface shows it at `now` (its events carry this). */
export async function cartOf(db: Db, row: CartRow, now: number): Promise<AbandonedCart> {
  const items = await cartItemsOf(db, row.store_id, row.id);
  return cartView(row, items, await requireCustomer(db, row.store_id, row.customer_id), now);
}
