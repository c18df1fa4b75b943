import { getInventoryItem } from '../../domain/catalog/inventory/queries';
import { productNotFound } from '../../domain/catalog/products/row';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `inventory.get`: GET /stores/{storeId}/v1/products/{id}/inventory: the product's stock (`manual` or `digital_aggregate`). */
const inventoryGet: Handler<'inventory.get'> = async (context) => {
  const item = await getInventoryItem(context.db, principalOf(context).storeId, recordIdOf(context.params.id, productNotFound));
  return { status: 200, body: envelope(context, item) };
};

export default inventoryGet;
