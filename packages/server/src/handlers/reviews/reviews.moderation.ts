import { notImplemented } from '../../http/handler';

/** `reviews.moderation`: PATCH /stores/{storeId}/v1/reviews/{id}/moderation. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('reviews.moderation');
