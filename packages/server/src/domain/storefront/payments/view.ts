import { toIso } from '../../../core/clock';
import { fromHalalas } from '../../../core/money';
import type { Payment, PaymentRow } from './row';

/** The spec's Payment: the amount in SAR, and the card only as its brand and last four digits. */
export function paymentView(row: Readonly<PaymentRow>): Payment {
  return {
    id: row.id,
    order_id: Number(row.order_id),
    method: row.method,
    status: row.status,
    amount: fromHalalas(Number(row.amount_halalas)),
    card: row.card_brand === null || row.card_last4 === null ? null : { brand: row.card_brand, last4: row.card_last4 },
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}
