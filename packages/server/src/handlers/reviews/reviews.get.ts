import { notImplemented } from '../../http/handler';

/** `reviews.get`: GET /stores/{storeId}/v1/reviews/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('reviews.get');
