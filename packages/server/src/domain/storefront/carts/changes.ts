import { randomBytes } from 'node:crypto';
import { ApiError } from '../../../core/errors';
import type { Db } from '../../../db/transactions';
import { findStore } from '../../../platform/stores';
import { type Actor, anyVersion, eventBy } from '../../common/actor';
import { changeVersionedWithResult, createVersioned } from '../../common/versioned';
import { requireCustomer } from '../customers/queries';
import { type OrderLineRequest, type PlaceOrder, placeOrder, priceLines } from '../orders/changes';
import type { OrderRow } from '../orders/row';
import { vatOf } from '../pricing';
import { cartItemsOf, cartOf, cartResource } from './queries';
import type { CartItemRow, CartRow } from './row';

export interface AbandonCart {
  customerId: number;
  items: readonly OrderLineRequest[];
}

/** The link a recovery message carries: the store's own domain, the cart, and an unguessable token. */
async function checkoutUrlOf(db: Db, storeId: string): Promise<string> {
  const store = await findStore(db, storeId);
  if (!store) throw new Error(`Store ${storeId} is missing`);
  return `https://${store.domain}/checkout/recover?t=${randomBytes(12).toString('base64url')}`;
}

/**
 * A shopper leaves a checkout: the cart keeps the lines at the prices they saw (the store's active,
 * priced products, as an order's are), its subtotal, and its total with 15 % VAT (no shipping is
 * chosen before checkout ends); `abandoned_cart.created`. Stock is not taken: nothing is sold.
 */
export async function abandonCart(db: Db, actor: Actor, request: AbandonCart): Promise<CartRow> {
  let lines: Awaited<ReturnType<typeof priceLines>> = [];
  return createVersioned(db, actor, cartResource, {
    columns: async (trx) => {
      await requireCustomer(trx, actor.storeId, request.customerId);
      lines = await priceLines(trx, actor.storeId, request.items);
      const subtotal = lines.reduce((sum, line) => sum + line.total_halalas, 0);
      return {
        customer_id: request.customerId,
        subtotal_halalas: subtotal,
        total_halalas: subtotal + vatOf(subtotal),
        checkout_url: await checkoutUrlOf(trx, actor.storeId),
        recovered_order_id: null,
      };
    },
    parts: async (id, trx) => {
      const items: Array<Omit<CartItemRow, 'id'>> = lines.map((line) => ({
        store_id: actor.storeId,
        cart_id: id,
        product_id: line.product_id,
        name: line.name,
        quantity: line.quantity,
        unit_price_halalas: line.unit_price_halalas,
        total_halalas: line.total_halalas,
      }));
      await trx('abandoned_cart_items').insert(items);
    },
    events: async (created, trx) => [eventBy(actor, 'abandoned_cart.created', { cart: await cartOf(trx, created, actor.now) })],
  });
}

/** What the shopper brings to the recovered checkout; the reference as `PlaceOrder` takes it (the simulator's). */
export type RecoveredCheckout = Pick<PlaceOrder, 'couponCode' | 'reference'>;

/**
 * The shopper comes back and orders the cart: an order of the cart's customer and lines, placed by
 * the order's own rules (today's prices, stock, coupon), and the cart names it in
 * `recovered_order_id`. A cart is recovered once (409 CART_ALREADY_RECOVERED).
 */
export async function recoverCart(db: Db, actor: Actor, cartId: number, checkout: RecoveredCheckout = {}): Promise<OrderRow> {
  const { result: order } = await changeVersionedWithResult(db, actor, cartResource, cartId, {
    precondition: anyVersion,
    columns: async (current, trx) => {
      if (current.recovered_order_id !== null) {
        throw new ApiError('CART_ALREADY_RECOVERED', `Cart ${current.id} was already ordered as order ${current.recovered_order_id}.`);
      }
      const items = (await cartItemsOf(trx, actor.storeId, current.id)).map((item) => ({ productId: item.product_id, quantity: item.quantity }));
      const placed = await placeOrder(trx, actor, { ...checkout, customerId: current.customer_id, items });
      return { columns: { recovered_order_id: placed.id }, result: placed };
    },
  });
  return order;
}
