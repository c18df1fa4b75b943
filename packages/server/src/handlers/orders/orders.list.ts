import { listOrders } from '../../domain/storefront/orders/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/**
 * `orders.list`: GET /stores/{storeId}/v1/orders. Keyset pages by id; the filters (AND) travel in the
 * cursor, so a cursor only works with the same filters. Contact details need `customers:read`.
 */
const ordersList: Handler<'orders.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const principal = principalOf(context);
  const page = await listOrders(context.db, principal.storeId, filters, principal.scopes, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default ordersList;
