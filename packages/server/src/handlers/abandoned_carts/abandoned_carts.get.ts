import { notImplemented } from '../../http/handler';

/** `abandoned_carts.get`: GET /stores/{storeId}/v1/abandoned-carts/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('abandoned_carts.get');
