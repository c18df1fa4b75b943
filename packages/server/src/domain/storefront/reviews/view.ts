import { toIso } from '../../../core/clock';
import { type CustomerRow, customerSummary } from '../customers/row';
import type { Review, ReviewRow } from './row';

export function reviewView(row: ReviewRow, customer: CustomerRow): Review {
  return {
    id: row.id,
    product_id: row.product_id,
    order_id: row.order_id,
    customer: customerSummary(customer),
    rating: row.rating,
    content: row.content,
    status: row.status,
    moderated_at: row.moderated_at === null ? null : toIso(Number(row.moderated_at)),
    created_at: toIso(Number(row.created_at)),
  };
}
