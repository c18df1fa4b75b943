import { notImplemented } from '../../http/handler';

/** `inventory.list`: GET /stores/{storeId}/v1/inventory. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('inventory.list');
