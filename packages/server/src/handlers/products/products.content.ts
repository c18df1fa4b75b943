import { notImplemented } from '../../http/handler';

/** `products.content`: PATCH /stores/{storeId}/v1/products/{id}/content. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('products.content');
