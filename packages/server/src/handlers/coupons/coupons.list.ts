import { listCoupons } from '../../domain/storefront/coupons/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/**
 * `coupons.list`: GET /stores/{storeId}/v1/coupons. Keyset pages by id; the filters (AND) travel in
 * the cursor, so a cursor only works with the same filters.
 */
const couponsList: Handler<'coupons.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const page = await listCoupons(context.db, principalOf(context).storeId, filters, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default couponsList;
