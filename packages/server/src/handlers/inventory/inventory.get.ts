import { getInventoryItem } from '../../domain/catalog/inventory';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `inventory.get`: GET /stores/{storeId}/v1/products/{id}/inventory: the product's stock (`manual` or `digital_aggregate`). */
const inventoryGet: Handler<'inventory.get'> = async (context) => {
  const { storeId } = principalOf(context);
  return { status: 200, body: envelope(context, await getInventoryItem(context.db, storeId, context.params.id)) };
};

export default inventoryGet;
