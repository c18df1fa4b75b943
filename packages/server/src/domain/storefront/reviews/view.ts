import { toIso } from '../../../core/clock';
import type { CustomerRow } from '../customers/row';
import { customerSummaryView } from '../customers/view';
import type { Review, ReviewRow } from './row';

export function reviewView(row: ReviewRow, customer: CustomerRow): Review {
  return {
    id: row.id,
    product_id: row.product_id,
    order_id: row.order_id,
    // Only events show it today, with contact details as they always had; its reads will pass the token's scope.
    customer: customerSummaryView(customer, true),
    rating: row.rating,
    content: row.content,
    status: row.status,
    moderated_at: row.moderated_at === null ? null : toIso(Number(row.moderated_at)),
    created_at: toIso(Number(row.created_at)),
  };
}
