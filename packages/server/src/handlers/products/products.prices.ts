import { notImplemented } from '../../http/handler';

/** `products.prices`: PATCH /stores/{storeId}/v1/products/{id}/prices. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('products.prices');
