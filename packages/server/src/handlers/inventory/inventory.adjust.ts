import { notImplemented } from '../../http/handler';

/** `inventory.adjust`: POST /stores/{storeId}/v1/products/{id}/inventory-adjustments. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('inventory.adjust');
