import { toIso } from '../../../core/clock';
import type { Reader } from '../../../core/field-scopes';
import type { CustomerRow } from '../customers/row';
import { customerSummaryView } from '../customers/view';
import type { Review, ReviewRow } from './row';

/** The review as the interface shows it; the customer's e-mail and mobile as `reader` may see them (`customers:read`). */
export function reviewView(row: ReviewRow, customer: CustomerRow, reader: Reader): Review {
  return {
    id: row.id,
    product_id: row.product_id,
    order_id: row.order_id,
    customer: customerSummaryView(customer, reader),
    rating: row.rating,
    content: row.content,
    status: row.status,
    moderated_at: row.moderated_at === null ? null : toIso(Number(row.moderated_at)),
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}
