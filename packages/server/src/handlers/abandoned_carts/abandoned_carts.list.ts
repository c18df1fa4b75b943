import { notImplemented } from '../../http/handler';

/** `abandoned_carts.list`: GET /stores/{storeId}/v1/abandoned-carts. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('abandoned_carts.list');
