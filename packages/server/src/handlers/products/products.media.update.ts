import { notImplemented } from '../../http/handler';

/** `products.media.update`: PATCH /stores/{storeId}/v1/products/{id}/media. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('products.media.update');
