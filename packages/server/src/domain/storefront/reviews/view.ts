import { toIso } from '../../../core/clock';
import type { CustomerRow } from '../customers/row';
import { customerSummaryView } from '../customers/view';
import type { Review, ReviewRow } from './row';

/** The review as the interface shows it; the customer's e-mail and mobile only when `showContact` (`customers:read`). */
export function reviewView(row: ReviewRow, customer: CustomerRow, showContact: boolean): Review {
  return {
    id: row.id,
    product_id: row.product_id,
    order_id: row.order_id,
    customer: customerSummaryView(customer, showContact),
    rating: row.rating,
    content: row.content,
    status: row.status,
    moderated_at: row.moderated_at === null ? null : toIso(Number(row.moderated_at)),
    created_at: toIso(Number(row.created_at)),
  };
}
