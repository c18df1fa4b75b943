import { adjustInventory } from '../../domain/catalog/inventory/changes';
import { productNotFound } from '../../domain/catalog/products/row';
import { envelope } from '../../http/envelope';
import { actorOf, type Handler, recordIdOf } from '../../http/handler';

/** `inventory.adjust`: POST /stores/{storeId}/v1/products/{id}/inventory-adjustments. */
const inventoryAdjust: Handler<'inventory.adjust'> = async (context) => {
  const adjustment = await adjustInventory(context.db, actorOf(context), recordIdOf(context.params.id, productNotFound), context.body);
  return { status: 201, body: envelope(context, adjustment) };
};

export default inventoryAdjust;
