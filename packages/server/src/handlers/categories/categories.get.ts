import { notImplemented } from '../../http/handler';

/** `categories.get`: GET /stores/{storeId}/v1/categories/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('categories.get');
