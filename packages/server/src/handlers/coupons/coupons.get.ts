import { getCoupon } from '../../domain/storefront/coupons/queries';
import { couponNotFound } from '../../domain/storefront/coupons/row';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `coupons.get`: GET /stores/{storeId}/v1/coupons/{id}: one coupon of the token's store, with its usage. */
const couponsGet: Handler<'coupons.get'> = async (context) => {
  const coupon = await getCoupon(context.db, principalOf(context).storeId, recordIdOf(context.params.id, couponNotFound));
  return { status: 200, body: envelope(context, coupon) };
};

export default couponsGet;
