import { toIso } from '../../../core/clock';
import type { Reader } from '../../../core/field-scopes';
import { fromHalalas } from '../../../core/money';
import type { CustomerRow } from '../customers/row';
import { customerSummaryView } from '../customers/view';
import type { AbandonedCart, CartItemRow, CartRow } from './row';

const MINUTE_MS = 60_000;

/**
 * The cart as the interface shows it, its customer's contact details as `reader` may see them; its
 * age is counted at `now`, from when it last changed.
 */
export function cartView(row: CartRow, items: readonly CartItemRow[], customer: CustomerRow, reader: Reader, now: number): AbandonedCart {
  return {
    id: row.id,
    customer: customerSummaryView(customer, reader),
    items: items.map((item) => ({
      product_id: item.product_id,
      name: item.name,
      quantity: item.quantity,
      unit_price: fromHalalas(Number(item.unit_price_halalas)),
      total: fromHalalas(Number(item.total_halalas)),
    })),
    subtotal: fromHalalas(Number(row.subtotal_halalas)),
    total: fromHalalas(Number(row.total_halalas)),
    checkout_url: row.checkout_url,
    age_minutes: Math.max(0, Math.floor((now - Number(row.updated_at)) / MINUTE_MS)),
    recovered_order_id: row.recovered_order_id,
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}
