import { notImplemented } from '../../http/handler';

/** `orders.digital_items`: GET /stores/{storeId}/v1/orders/{id}/digital-items. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('orders.digital_items');
