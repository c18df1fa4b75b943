import { notImplemented } from '../../http/handler';

/** `categories.create`: POST /stores/{storeId}/v1/categories. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('categories.create');
