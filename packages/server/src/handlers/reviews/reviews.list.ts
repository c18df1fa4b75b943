import { notImplemented } from '../../http/handler';

/** `reviews.list`: GET /stores/{storeId}/v1/reviews. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('reviews.list');
