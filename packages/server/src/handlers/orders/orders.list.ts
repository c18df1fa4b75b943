import { notImplemented } from '../../http/handler';

/** `orders.list`: GET /stores/{storeId}/v1/orders. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('orders.list');
