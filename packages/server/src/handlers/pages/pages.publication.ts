import { notImplemented } from '../../http/handler';

/** `pages.publication`: PATCH /stores/{storeId}/v1/pages/{id}/publication. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('pages.publication');
