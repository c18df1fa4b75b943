import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { ApiError, invalidBodyField } from '../../../core/errors';
import { lockRows } from '../../../db/locks';
import { type Db, inTransaction } from '../../../db/transactions';
import type { ProductRow } from '../../catalog/products/row';
import { type Actor, anyVersion, eventBy } from '../../common/actor';
import { type ColumnsAndResult, changeVersioned, createVersionedWithResult } from '../../common/versioned';
import { redeemCoupon } from '../coupons/changes';
import { requireCustomer } from '../customers/queries';
import { type PaymentAttempt, recordPayment, refundPayments } from '../payments/changes';
import type { PaymentRow } from '../payments/row';
import { SHIPPING_HALALAS, shareByLargestRemainder, vatOf } from '../pricing';
import { findOrder, orderItemsOf, orderOf, orderResource } from './queries';
import { countOrderInRollups } from './rollups';
import { type OrderColumns, type OrderItemColumns, type OrderRow, type OrderStatus, orderNotFound, orderStateConflict } from './row';
import { deliverDigitalUnits, giveBackStock, takeStock } from './stock';

export interface OrderLineRequest {
  productId: number;
  quantity: number;
}

/** What a shopper checks out: their lines, and a coupon code if they have one. */
export interface PlaceOrder {
  customerId: number;
  items: readonly OrderLineRequest[];
  couponCode?: string | null;
  /** The reference shown to the shopper; a fresh `ORD-…` when left out. */
  reference?: string;
}

/** OrderItem's limits: 1 to 200 lines, 1 to 10,000 of each. */
const MAX_LINES = 200;
const MAX_QUANTITY = 10_000;

/** Order's `reference`: what a shopper reads out, so letters, digits and dashes only. */
const REFERENCE = /^[A-Za-z0-9-]{1,32}$/;

const freshReference = () => `ORD-${randomBytes(5).toString('hex').toUpperCase()}`;

function checkLines(items: readonly OrderLineRequest[]): void {
  if (items.length === 0 || items.length > MAX_LINES) throw invalidBodyField('/items', `an order has 1 to ${MAX_LINES} lines`);
  const seen = new Set<number>();
  for (const [index, { productId, quantity }] of items.entries()) {
    if (!Number.isInteger(quantity) || quantity < 1 || quantity > MAX_QUANTITY) throw invalidBodyField(`/items/${index}/quantity`, `is 1 to ${MAX_QUANTITY}`);
    if (seen.has(productId)) throw invalidBodyField(`/items/${index}/product_id`, 'names a product another line already holds');
    seen.add(productId);
  }
}

/**
 * The order's lines from the store's products as they are now: each must be active and priced
 * (422 PRODUCT_UNAVAILABLE otherwise, another store's product too); name, price, kind and
 * category are copied onto the line, so later catalog changes leave the order as it was.
 */
export async function priceLines(
  db: Db,
  storeId: string,
  items: readonly OrderLineRequest[],
): Promise<Array<Omit<OrderItemColumns, 'discount_share_halalas'>>> {
  checkLines(items);
  const ids = items.map((item) => item.productId);
  const products = (await db<ProductRow>('products').where({ store_id: storeId }).whereIn('id', ids)) as ProductRow[];
  const byId = new Map(products.map((product) => [Number(product.id), product]));
  return items.map(({ productId, quantity }, index) => {
    const product = byId.get(productId);
    const forSale = product?.status === 'active' && product.price_state === 'ready';
    if (!product || !forSale) {
      throw new ApiError('PRODUCT_UNAVAILABLE', `Product ${productId} is not for sale in this store.`, {
        details: [{ location: 'body', field: `/items/${index}/product_id`, message: 'is not an active, priced product of the store' }],
      });
    }
    const unitPrice = Number(product.price_halalas);
    return {
      product_id: productId,
      name: product.name,
      sku: null,
      quantity,
      unit_price_halalas: unitPrice,
      total_halalas: unitPrice * quantity,
      product_kind: product.product_kind,
      category_id: product.category_id === null ? null : Number(product.category_id),
    };
  });
}

/** The events of an order's change: the order as it now is. */
const orderEvent =
  (actor: Actor, type: 'order.created' | 'order.paid' | 'order.updated' | 'order.cancelled') => async (order: OrderRow, trx: Knex.Transaction) => [
    eventBy(actor, type, { order: await orderOf(trx, order) }),
  ];

/**
 * A shopper places an order, in one transaction: lines from the store's active, priced products; the
 * coupon applied and its use counted; shipping when something is physical (unless the coupon ships
 * free); 15 % VAT on subtotal − discount + shipping, half up; stock taken (409 INSUFFICIENT_STOCK);
 * the order counted in its day's rollups; `order.created` (after the stock's `inventory.adjusted`).
 * The order is `pending` and `unpaid`.
 */
export async function placeOrder(db: Db, actor: Actor, request: PlaceOrder): Promise<OrderRow> {
  const reference = request.reference ?? freshReference();
  if (!REFERENCE.test(reference)) throw invalidBodyField('/reference', 'is 1 to 32 letters, digits and dashes');
  const { created } = await createVersionedWithResult(db, actor, orderResource, {
    columns: async (trx): Promise<ColumnsAndResult<OrderColumns, OrderItemColumns[]>> => {
      await requireCustomer(trx, actor.storeId, request.customerId);
      const priced = await priceLines(trx, actor.storeId, request.items);
      const subtotal = priced.reduce((sum, line) => sum + line.total_halalas, 0);
      const coupon = request.couponCode ? await redeemCoupon(trx, actor, request.couponCode, subtotal) : undefined;
      const discount = coupon?.discount ?? 0;
      const shipping = priced.some((line) => line.product_kind === 'physical') && !coupon?.freeShipping ? SHIPPING_HALALAS : 0;
      const tax = vatOf(subtotal - discount + shipping);
      await takeStock(trx, actor, reference, priced);
      const shares = shareByLargestRemainder(
        discount,
        priced.map((line) => line.total_halalas),
      );
      const lines = priced.map((line, index) => ({ ...line, discount_share_halalas: shares[index] ?? 0 }));
      const columns: OrderColumns = {
        reference,
        status: 'pending',
        payment_status: 'unpaid',
        customer_id: request.customerId,
        coupon_code: coupon?.code ?? null,
        subtotal_halalas: subtotal,
        discount_halalas: discount,
        shipping_halalas: shipping,
        tax_halalas: tax,
        total_halalas: subtotal - discount + shipping + tax,
        paid_at: null,
      };
      return { columns, result: lines };
    },
    parts: async (id, trx, lines) => {
      await trx('order_items').insert(lines.map((line) => ({ ...line, store_id: actor.storeId, order_id: id })));
      const order = await findOrder(trx, actor.storeId, id);
      if (!order) throw orderNotFound();
      await countOrderInRollups(trx, order, await orderItemsOf(trx, actor.storeId, id), 1);
    },
    events: orderEvent(actor, 'order.created'),
  });
  return created;
}

const requireUnpaidPending = (order: OrderRow, wanted: string) => {
  if (order.status !== 'pending' || order.payment_status !== 'unpaid') throw orderStateConflict(order, wanted);
};

/**
 * The shopper pays a pending order's total: the payment is recorded, the digital lines get their
 * units (409 INSUFFICIENT_STOCK refuses the payment when too few are unsold), and the order is
 * `paid` and `processing`; `order.paid`. A paid, refunded or cancelled order is 409
 * ORDER_STATE_CONFLICT.
 */
export function payOrder(db: Db, actor: Actor, orderId: number, attempt: PaymentAttempt): Promise<OrderRow> {
  return changeVersioned(db, actor, orderResource, orderId, {
    precondition: anyVersion,
    columns: async (current, trx): Promise<Partial<OrderColumns> & { status: OrderStatus }> => {
      requireUnpaidPending(current, 'paid');
      await recordPayment(trx, actor, current, attempt, 'paid');
      await deliverDigitalUnits(trx, actor, await orderItemsOf(trx, actor.storeId, current.id));
      return { payment_status: 'paid', status: 'processing', paid_at: actor.now };
    },
    events: orderEvent(actor, 'order.paid'),
  });
}

/**
 * A payment attempt that the payment provider declined: recorded as `failed`; the order stays
 * pending and unpaid, so it changes no order and writes no event. Only a pending, unpaid order
 * takes attempts (409 ORDER_STATE_CONFLICT).
 */
export function failPayment(db: Db, actor: Actor, orderId: number, attempt: PaymentAttempt): Promise<PaymentRow> {
  return inTransaction(db, async (trx) => {
    await lockRows(trx, trx('orders').where({ store_id: actor.storeId, id: orderId }));
    const order = await findOrder(trx, actor.storeId, orderId);
    if (!order) throw orderNotFound();
    requireUnpaidPending(order, 'paid');
    return recordPayment(trx, actor, order, attempt, 'failed');
  });
}

/**
 * The merchant refunds a paid order in full: the order and its payment become `refunded`;
 * `order.updated`. Its status and its place in the analytics stay (sales by order date; a refund is
 * not subtracted), and its delivered digital units stay delivered.
 */
export function refundOrder(db: Db, actor: Actor, orderId: number): Promise<OrderRow> {
  return changeVersioned(db, actor, orderResource, orderId, {
    precondition: anyVersion,
    columns: async (current, trx): Promise<Partial<OrderColumns>> => {
      if (current.payment_status !== 'paid') throw orderStateConflict(current, 'refunded');
      await refundPayments(trx, actor, current.id);
      return { payment_status: 'refunded' };
    },
    events: orderEvent(actor, 'order.updated'),
  });
}

/**
 * Cancels an order that has not shipped (pending or processing; else 409 ORDER_STATE_CONFLICT): its
 * manual stock goes back (paid or not: nothing left the store), a paid order is refunded in full,
 * delivered digital units stay delivered, and the order leaves its day's rollups; `order.cancelled`.
 */
export function cancelOrder(db: Db, actor: Actor, orderId: number): Promise<OrderRow> {
  return changeVersioned(db, actor, orderResource, orderId, {
    precondition: anyVersion,
    columns: async (current, trx): Promise<Partial<OrderColumns> & { status: OrderStatus }> => {
      if (current.status !== 'pending' && current.status !== 'processing') throw orderStateConflict(current, 'cancelled');
      const items = await orderItemsOf(trx, actor.storeId, current.id);
      await giveBackStock(trx, actor, current.reference, items);
      await countOrderInRollups(trx, current, items, -1);
      if (current.payment_status !== 'paid') return { status: 'cancelled' };
      await refundPayments(trx, actor, current.id);
      return { status: 'cancelled', payment_status: 'refunded' };
    },
    events: orderEvent(actor, 'order.cancelled'),
  });
}

/**
 * The merchant moves a paid order on: `processing` → `shipped` → `delivered`; an order with nothing
 * physical may go from `processing` to `delivered` at once. Any other step is 409
 * ORDER_STATE_CONFLICT. `order.updated`.
 */
export function fulfilOrder(db: Db, actor: Actor, orderId: number, next: 'shipped' | 'delivered'): Promise<OrderRow> {
  return changeVersioned(db, actor, orderResource, orderId, {
    precondition: anyVersion,
    columns: async (current, trx): Promise<Partial<OrderColumns> & { status: OrderStatus }> => {
      const ships = (await orderItemsOf(trx, actor.storeId, current.id)).some((item) => item.product_kind === 'physical');
      const allowedFrom: readonly OrderStatus[] = next === 'shipped' ? ['processing'] : ships ? ['shipped'] : ['processing', 'shipped'];
      if (!allowedFrom.includes(current.status)) throw orderStateConflict(current, next);
      return { status: next };
    },
    events: orderEvent(actor, 'order.updated'),
  });
}
