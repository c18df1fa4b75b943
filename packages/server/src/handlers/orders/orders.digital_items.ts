import { digitalItemsOf } from '../../domain/storefront/orders/queries';
import { orderNotFound } from '../../domain/storefront/orders/row';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `orders.digital_items`: GET /stores/{storeId}/v1/orders/{id}/digital-items: what the order's digital lines delivered, unpaged. */
const ordersDigitalItems: Handler<'orders.digital_items'> = async (context) => {
  const items = await digitalItemsOf(context.db, principalOf(context).storeId, recordIdOf(context.params.id, orderNotFound));
  return { status: 200, body: envelope(context, items) };
};

export default ordersDigitalItems;
