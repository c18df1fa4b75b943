import { type Reader, visibleTo } from '../../../core/field-scopes';
import type { CustomerRow, CustomerSummary } from './row';

/**
 * The customer as orders, carts and reviews show them, to `reader`. E-mail and mobile are protected
 * customer data: present when the shopper gave them and the reader holds the scopes the spec puts
 * beside them (`x-field-scopes` of CustomerSummary: `customers:read`), in answers and events alike.
 */
export function customerSummaryView(row: Pick<CustomerRow, 'id' | 'name' | 'email' | 'mobile'>, reader: Reader): CustomerSummary {
  const customer: CustomerSummary = {
    id: row.id,
    name: row.name,
    ...(row.email === null ? {} : { email: row.email }),
    ...(row.mobile === null ? {} : { mobile: row.mobile }),
  };
  return visibleTo('CustomerSummary', customer, reader);
}
