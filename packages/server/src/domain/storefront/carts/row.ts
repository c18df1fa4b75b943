import type { components } from '@svc/contract';
import { ApiError } from '../../../core/errors';

export type AbandonedCart = components['schemas']['AbandonedCart'];

/** An `abandoned_carts` row: a checkout a shopper started and left. */
export interface CartRow {
  id: number;
  store_id: string;
  customer_id: number;
  subtotal_halalas: number;
  total_halalas: number;
  checkout_url: string;
  recovered_order_id: number | null;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

/** One line of a cart, at the price the shopper saw. */
export interface CartItemRow {
  id: number;
  store_id: string;
  cart_id: number;
  product_id: number;
  name: string;
  quantity: number;
  unit_price_halalas: number;
  total_halalas: number;
}

export const cartNotFound = () => new ApiError('NOT_FOUND', 'No abandoned cart with that id in this store.');
