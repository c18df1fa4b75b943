import { setCouponStatus } from '../../domain/storefront/coupons/changes';
import { couponNotFound } from '../../domain/storefront/coupons/row';
import { couponView } from '../../domain/storefront/coupons/view';
import { envelope } from '../../http/envelope';
import { actorOf, type Handler, recordIdOf } from '../../http/handler';

/** `coupons.status`: PATCH /stores/{storeId}/v1/coupons/{id}/status: active ⇄ inactive (the spec takes neither Idempotency-Key nor If-Match). */
const couponsStatus: Handler<'coupons.status'> = async (context) => {
  const coupon = await setCouponStatus(context.db, actorOf(context), recordIdOf(context.params.id, couponNotFound), context.body.status);
  return { status: 200, body: envelope(context, couponView(coupon)) };
};

export default couponsStatus;
