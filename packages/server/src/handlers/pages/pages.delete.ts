import { notImplemented } from '../../http/handler';

/** `pages.delete`: DELETE /stores/{storeId}/v1/pages/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('pages.delete');
