import { toIso } from '../../../core/clock';
import type { Reader } from '../../../core/field-scopes';
import { fromHalalas } from '../../../core/money';
import type { CustomerRow } from '../customers/row';
import { customerSummaryView } from '../customers/view';
import type { DigitalItem, DigitalUnitRow, Order, OrderItem, OrderItemRow, OrderRow } from './row';

export function orderItemView(row: OrderItemRow): OrderItem {
  return {
    id: row.id,
    product_id: row.product_id,
    name: row.name,
    sku: row.sku,
    quantity: row.quantity,
    unit_price: fromHalalas(Number(row.unit_price_halalas)),
    total: fromHalalas(Number(row.total_halalas)),
    product_kind: row.product_kind,
  };
}

/** The order as the interface shows it, with its lines and its customer (contact details as `reader` may see them). */
export function orderView(row: OrderRow, items: readonly OrderItemRow[], customer: CustomerRow, reader: Reader): Order {
  return {
    id: row.id,
    reference: row.reference,
    status: row.status,
    payment_status: row.payment_status,
    customer: customerSummaryView(customer, reader),
    items: items.map(orderItemView),
    amounts: {
      subtotal: fromHalalas(Number(row.subtotal_halalas)),
      discount: fromHalalas(Number(row.discount_halalas)),
      shipping: fromHalalas(Number(row.shipping_halalas)),
      tax: fromHalalas(Number(row.tax_halalas)),
      total: fromHalalas(Number(row.total_halalas)),
    },
    coupon_code: row.coupon_code,
    created_at: toIso(Number(row.created_at)),
    paid_at: row.paid_at === null ? null : toIso(Number(row.paid_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}

/** A delivered unit as the interface shows it: units hold codes only (inventory brings `codes`), so never a file. */
export function digitalItemView(row: DigitalUnitRow): DigitalItem {
  return {
    id: row.id,
    order_id: row.order_id,
    order_item_id: row.order_item_id,
    product_id: row.product_id,
    kind: 'code',
    code: row.code,
    file_url: null,
    delivered_at: toIso(Number(row.delivered_at)),
  };
}
