import { notImplemented } from '../../http/handler';

/** `me`: GET /stores/{storeId}/v1/me. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('me');
