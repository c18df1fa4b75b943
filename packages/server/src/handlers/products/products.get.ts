import { notImplemented } from '../../http/handler';

/** `products.get`: GET /stores/{storeId}/v1/products/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('products.get');
