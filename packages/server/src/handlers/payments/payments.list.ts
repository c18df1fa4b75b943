import { listPayments } from '../../domain/storefront/payments/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/**
 * `payments.list`: GET /stores/{storeId}/v1/payments. Keyset pages by id; the filters (AND) travel
 * in the cursor, so a cursor only works with the same filters.
 */
const paymentsList: Handler<'payments.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const page = await listPayments(context.db, principalOf(context).storeId, filters, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default paymentsList;
