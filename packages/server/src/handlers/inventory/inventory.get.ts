import { notImplemented } from '../../http/handler';

/** `inventory.get`: GET /stores/{storeId}/v1/products/{id}/inventory. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('inventory.get');
