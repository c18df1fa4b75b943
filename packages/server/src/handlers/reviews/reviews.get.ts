import { getReview } from '../../domain/storefront/reviews/queries';
import { reviewNotFound } from '../../domain/storefront/reviews/row';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `reviews.get`: GET /stores/{storeId}/v1/reviews/{id}: one review of the token's store, in any status; contact details need `customers:read`. */
const reviewsGet: Handler<'reviews.get'> = async (context) => {
  const principal = principalOf(context);
  const review = await getReview(context.db, principal.storeId, recordIdOf(context.params.id, reviewNotFound), principal.scopes);
  return { status: 200, body: envelope(context, review) };
};

export default reviewsGet;
