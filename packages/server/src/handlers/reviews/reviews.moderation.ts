import { moderateReview } from '../../domain/storefront/reviews/changes';
import { reviewOf } from '../../domain/storefront/reviews/queries';
import { reviewNotFound } from '../../domain/storefront/reviews/row';
import { envelope } from '../../http/envelope';
import { actorOf, type Handler, principalOf, recordIdOf } from '../../http/handler';

/**
 * `reviews.moderation`: PATCH /stores/{storeId}/v1/reviews/{id}/moderation: publishes or hides the
 * review and answers it as `reviews.get` would; contact details need `customers:read`.
 */
const reviewsModeration: Handler<'reviews.moderation'> = async (context) => {
  const id = recordIdOf(context.params.id, reviewNotFound);
  const moderated = await moderateReview(context.db, actorOf(context), id, context.body.status);
  const review = await reviewOf(context.db, moderated, principalOf(context).scopes);
  return { status: 200, body: envelope(context, review) };
};

export default reviewsModeration;
