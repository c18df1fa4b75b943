import { notImplemented } from '../../http/handler';

/** `orders.get`: GET /stores/{storeId}/v1/orders/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('orders.get');
