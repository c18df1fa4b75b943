import { getOrder } from '../../domain/storefront/orders/queries';
import { orderNotFound } from '../../domain/storefront/orders/row';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `orders.get`: GET /stores/{storeId}/v1/orders/{id}: one order of the token's store; contact details need `customers:read`. */
const ordersGet: Handler<'orders.get'> = async (context) => {
  const principal = principalOf(context);
  const order = await getOrder(context.db, principal.storeId, recordIdOf(context.params.id, orderNotFound), principal.scopes);
  return { status: 200, body: envelope(context, order) };
};

export default ordersGet;
