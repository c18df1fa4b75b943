import type { components } from '@svc/contract';
import { ApiError } from '../../../core/errors';

export type Payment = components['schemas']['Payment'];
export type PaymentMethod = components['schemas']['PaymentMethod'];
export type PaymentCard = components['schemas']['PaymentCard'];

/** A `payments` row: one attempt to pay an order, for its whole total. */
export interface PaymentRow {
  id: number;
  store_id: string;
  order_id: number;
  method: PaymentMethod;
  status: components['schemas']['PaymentStatus'];
  amount_halalas: number;
  card_brand: PaymentCard['brand'] | null;
  card_last4: string | null;
  created_at: number;
  updated_at: number;
}

export const paymentNotFound = () => new ApiError('NOT_FOUND', 'No payment with that id in this store.');
