import type { Knex } from 'knex';
import { type Actor, anyVersion } from '../../common/actor';
import { changeVersioned } from '../../common/versioned';
import { divideHalfUp } from '../pricing';
import { couponResource, findCouponByCode } from './queries';
import { type CouponRow, couponNotApplicable } from './row';

export interface Redemption {
  /** The code as the store wrote it. */
  code: string;
  discount: number;
  freeShipping: boolean;
}

/** 100.00 % in the hundredths of a percent percentage coupons store. */
const WHOLE_PERCENT = 10_000;

/** Why the coupon does not apply to an order of `subtotal` now, or undefined when it does. */
function refusalOf(coupon: CouponRow, subtotal: number, now: number): string | undefined {
  if (coupon.status !== 'active') return 'it is not active';
  if (coupon.starts_at !== null && now < Number(coupon.starts_at)) return 'it has not started yet';
  if (coupon.expires_at !== null && now > Number(coupon.expires_at)) return 'it has expired';
  if (coupon.usage_limit !== null && coupon.usage_count >= coupon.usage_limit) return 'it has been used as often as it may be';
  if (coupon.minimum_order_halalas !== null && subtotal < Number(coupon.minimum_order_halalas)) return 'the order is below its minimum amount';
  return undefined;
}

/** The discount on `subtotal`: a percentage half up, or the fixed amount; never more than the subtotal. */
function discountOf(coupon: CouponRow, subtotal: number): number {
  const amount = Number(coupon.amount_halalas);
  const discount = coupon.type === 'percentage' ? divideHalfUp(subtotal * amount, WHOLE_PERCENT) : amount;
  return Math.min(discount, subtotal);
}

/**
 * Applies the store's coupon (by code, case-insensitively) to an order of `subtotal` and counts the
 * use, in the order's transaction: the coupon row is locked while its dates, status, usage limit and
 * minimum are checked, so concurrent orders cannot use it past its limit. 422 COUPON_NOT_APPLICABLE.
 */
export async function redeemCoupon(trx: Knex.Transaction, actor: Actor, code: string, subtotal: number): Promise<Redemption> {
  const found = await findCouponByCode(trx, actor.storeId, code);
  if (!found) throw couponNotApplicable(code, 'the store has no such coupon');
  let redemption: Redemption | undefined;
  await changeVersioned(trx, actor, couponResource, found.id, {
    precondition: anyVersion,
    columns: (current) => {
      const refusal = refusalOf(current, subtotal, actor.now);
      if (refusal !== undefined) throw couponNotApplicable(code, refusal);
      redemption = { code: current.code, discount: discountOf(current, subtotal), freeShipping: Boolean(current.free_shipping) };
      return { usage_count: current.usage_count + 1 };
    },
  });
  if (!redemption) throw new Error('The coupon was not redeemed');
  return redemption;
}
