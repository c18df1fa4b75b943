import { notImplemented } from '../../http/handler';

/** `pages.get`: GET /stores/{storeId}/v1/pages/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('pages.get');
