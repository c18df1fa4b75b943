import { listInventory } from '../../domain/catalog/inventory';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `inventory.list`: GET /stores/{storeId}/v1/inventory: the stock of every product of the store, keyset-paged by product id. */
const inventoryList: Handler<'inventory.list'> = async (context) => {
  const { storeId } = principalOf(context);
  const { limit, cursor } = context.query;
  const { items, page } = await listInventory(context.db, context.keys.cursor, context.services.clock.now(), storeId, { limit, cursor });
  return { status: 200, body: pageEnvelope(context, items, page) };
};

export default inventoryList;
