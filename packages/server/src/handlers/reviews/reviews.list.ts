import { listReviews } from '../../domain/storefront/reviews/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/**
 * `reviews.list`: GET /stores/{storeId}/v1/reviews. Keyset pages by id, in every status; the filters
 * (AND) travel in the cursor, so a cursor only works with the same filters. Contact details need
 * `customers:read`.
 */
const reviewsList: Handler<'reviews.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const principal = principalOf(context);
  const page = await listReviews(context.db, principal.storeId, filters, principal.scopes, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default reviewsList;
