import { notImplemented } from '../../http/handler';

/** `products.create`: POST /stores/{storeId}/v1/products. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('products.create');
