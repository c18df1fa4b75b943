import type { components } from '@svc/contract';
import { ApiError, invalidBodyField } from '../../../core/errors';

export type Order = components['schemas']['Order'];
export type OrderItem = components['schemas']['OrderItem'];
export type OrderStatus = components['schemas']['OrderStatus'];
export type OrderPaymentStatus = components['schemas']['OrderPaymentStatus'];
export type ProductKind = components['schemas']['ProductKind'];
export type DigitalItem = components['schemas']['DigitalItem'];

/** An `orders` row as both databases return it. */
export interface OrderRow {
  id: number;
  store_id: string;
  reference: string;
  status: OrderStatus;
  payment_status: OrderPaymentStatus;
  customer_id: number;
  coupon_code: string | null;
  subtotal_halalas: number;
  discount_halalas: number;
  shipping_halalas: number;
  tax_halalas: number;
  total_halalas: number;
  resource_version: number;
  created_at: number;
  paid_at: number | null;
  updated_at: number;
}

/** The columns of an order the write path does not set itself. */
export type OrderColumns = Omit<OrderRow, 'id' | 'store_id' | 'resource_version' | 'created_at' | 'updated_at'>;

/** An `order_items` row: the product as it was when the order was placed. */
export interface OrderItemRow {
  id: number;
  store_id: string;
  order_id: number;
  product_id: number;
  name: string;
  sku: string | null;
  quantity: number;
  unit_price_halalas: number;
  total_halalas: number;
  /** The line's share of the order's discount, by largest remainder (the analytics' net sales). */
  discount_share_halalas: number;
  product_kind: ProductKind;
  category_id: number | null;
}

/** A `digital_units` row once delivered with an order's line. */
export interface DigitalUnitRow {
  id: number;
  product_id: number;
  code: string;
  order_id: number;
  order_item_id: number;
  delivered_at: number;
}

export type OrderItemColumns = Omit<OrderItemRow, 'id' | 'store_id' | 'order_id'>;

export const orderNotFound = () => new ApiError('NOT_FOUND', 'No order with that id in this store.');

/** A reference is the shopper's name for the order: one order per reference in a store. */
export const referenceTaken = () => invalidBodyField('/reference', 'is the reference of another order of the store');

export const orderStateConflict = (order: Pick<OrderRow, 'reference' | 'status' | 'payment_status'>, wanted: string) =>
  new ApiError('ORDER_STATE_CONFLICT', `Order ${order.reference} is ${order.status} and ${order.payment_status}: it cannot be ${wanted}.`);
