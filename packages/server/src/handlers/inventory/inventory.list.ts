import { listInventory } from '../../domain/catalog/inventory/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/**
 * `inventory.list`: GET /stores/{storeId}/v1/inventory: the stock of every product of the store,
 * keyset-paged by product id (by the product's `updated_at` and id given `updated_since`).
 */
const inventoryList: Handler<'inventory.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const page = await listInventory(context.db, principalOf(context).storeId, filters, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default inventoryList;
