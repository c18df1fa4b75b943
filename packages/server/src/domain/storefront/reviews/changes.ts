import { ApiError } from '../../../core/errors';
import type { Db } from '../../../db/transactions';
import { type Actor, eventBy } from '../../common/actor';
import { createVersioned } from '../../common/versioned';
import { requireCustomer } from '../customers/queries';
import { findOrder, orderItemsOf } from '../orders/queries';
import { reviewResource } from './queries';
import { type ReviewRow, reviewNotAllowed } from './row';
import { reviewView } from './view';

export interface WriteReview {
  customerId: number;
  orderId: number;
  productId: number;
  rating: number;
  content: string;
}

/** Review's limits. */
const MAX_CONTENT = 5000;

function checkReview({ rating, content }: WriteReview): void {
  const invalid = (field: string, message: string) =>
    new ApiError('VALIDATION_FAILED', 'The request is not valid.', { details: [{ location: 'body', field, message }] });
  if (!Number.isInteger(rating) || rating < 1 || rating > 5) throw invalid('/rating', 'is a whole number of stars, 1 to 5');
  if (content.length > MAX_CONTENT) throw invalid('/content', `is at most ${MAX_CONTENT} characters`);
}

/**
 * A shopper reviews a product they received: the order must be theirs, `delivered`, and hold the
 * product (422 REVIEW_NOT_ALLOWED otherwise, and for a second review of the product from the same
 * order). The review waits for moderation (`pending`); `review.created`.
 */
export async function writeReview(db: Db, actor: Actor, request: WriteReview): Promise<ReviewRow> {
  checkReview(request);
  return await createVersioned(db, actor, reviewResource, {
    columns: async (trx) => {
      await requireCustomer(trx, actor.storeId, request.customerId);
      const order = await findOrder(trx, actor.storeId, request.orderId);
      if (!order || order.customer_id !== request.customerId) throw reviewNotAllowed("the order is not this customer's");
      if (order.status !== 'delivered') throw reviewNotAllowed('the order has not been delivered');
      const holds = (await orderItemsOf(trx, actor.storeId, order.id)).some((item) => item.product_id === request.productId);
      if (!holds) throw reviewNotAllowed('the order does not hold the product');
      return {
        product_id: request.productId,
        order_id: order.id,
        customer_id: request.customerId,
        rating: request.rating,
        content: request.content,
        status: 'pending' as const,
        moderated_at: null,
      };
    },
    events: async (created, trx) => [
      eventBy(actor, 'review.created', { review: reviewView(created, await requireCustomer(trx, actor.storeId, created.customer_id)) }),
    ],
  });
}
