import { notImplemented } from '../../http/handler';

/** `pages.create`: POST /stores/{storeId}/v1/pages. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('pages.create');
