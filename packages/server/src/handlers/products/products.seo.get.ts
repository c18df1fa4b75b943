import { notImplemented } from '../../http/handler';

/** `products.seo.get`: GET /stores/{storeId}/v1/products/{id}/seo. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('products.seo.get');
