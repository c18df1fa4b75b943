import { listInventory } from '../../domain/catalog/inventory/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/** `inventory.list`: GET /stores/{storeId}/v1/inventory: the stock of every product of the store, keyset-paged by product id. */
const inventoryList: Handler<'inventory.list'> = async (context) => {
  const page = await listInventory(context.db, principalOf(context).storeId, listRequestOf(context, context.query));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default inventoryList;
