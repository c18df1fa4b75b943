import type { CustomerRow, CustomerSummary } from './row';

/**
 * The customer as orders, carts and reviews show them. E-mail and mobile are protected customer
 * data: present only when `showContact` (the token holds `customers:read`) and the shopper gave them.
 */
export function customerSummaryView(row: Pick<CustomerRow, 'id' | 'name' | 'email' | 'mobile'>, showContact: boolean): CustomerSummary {
  if (!showContact) return { id: row.id, name: row.name };
  return {
    id: row.id,
    name: row.name,
    ...(row.email === null ? {} : { email: row.email }),
    ...(row.mobile === null ? {} : { mobile: row.mobile }),
  };
}
