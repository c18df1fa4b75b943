import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import { fromHalalas } from '../../../core/money';

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

export function paymentView(row: PaymentRow): Payment {
  return {
    id: row.id,
    order_id: row.order_id,
    method: row.method,
    status: row.status,
    amount: fromHalalas(Number(row.amount_halalas)),
    card: row.card_brand === null || row.card_last4 === null ? null : { brand: row.card_brand, last4: row.card_last4 },
    created_at: toIso(Number(row.created_at)),
  };
}
