import { invalidBodyField } from '../../../core/errors';
import type { Db } from '../../../db/transactions';
import { type Actor, anyVersion, eventBy } from '../../common/actor';
import { changeVersioned, createVersioned } from '../../common/versioned';
import { requireCustomer } from '../customers/queries';
import { findOrder, orderItemsOf } from '../orders/queries';
import { reviewResource } from './queries';
import { type ModerationDecision, type ReviewRow, reviewNotAllowed } from './row';
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
  if (!Number.isInteger(rating) || rating < 1 || rating > 5) throw invalidBodyField('/rating', 'is a whole number of stars, 1 to 5');
  if (content.length > MAX_CONTENT) throw invalidBodyField('/content', `is at most ${MAX_CONTENT} characters`);
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
      // Events carry the customer's contact details, as order events do; a subscription to them needs `reviews:read`.
      eventBy(actor, 'review.created', { review: reviewView(created, await requireCustomer(trx, actor.storeId, created.customer_id), 'everything') }),
    ],
  });
}

/**
 * The store publishes or hides a review: from `pending`, `published` or `hidden` to `published` or
 * `hidden` (the decision's type has no way back to `pending`). Every decision is a moderation, the
 * same one again too, and stamps `moderated_at`; the rating and text stay as the shopper wrote them.
 * No event: the spec's webhooks name none for it.
 */
export function moderateReview(db: Db, actor: Actor, id: number, status: ModerationDecision): Promise<ReviewRow> {
  return changeVersioned(db, actor, reviewResource, id, {
    precondition: anyVersion,
    columns: () => ({ status, moderated_at: actor.now }),
  });
}
