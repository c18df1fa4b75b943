import { adjustInventory } from '../../domain/catalog/inventory';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/**
 * `inventory.adjust`: POST /stores/{storeId}/v1/products/{id}/inventory-adjustments. Runs in the
 * Idempotency-Key's transaction (`context.db`), so the adjustment and its stored response commit together.
 */
const inventoryAdjust: Handler<'inventory.adjust'> = async (context) => {
  const { storeId, installationId } = principalOf(context);
  const change = { storeId, installationId, pathId: context.params.id, now: context.services.clock.now() };
  return { status: 201, body: envelope(context, await adjustInventory(context.db, change, context.body)) };
};

export default inventoryAdjust;
