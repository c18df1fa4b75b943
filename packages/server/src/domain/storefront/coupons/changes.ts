import type { Knex } from 'knex';
import { ApiError, type ErrorDetail } from '../../../core/errors';
import type { Db } from '../../../db/transactions';
import { type Actor, anyVersion } from '../../common/actor';
import { nameKeyOf } from '../../common/text';
import { changeVersioned, changeVersionedWithResult, createVersioned } from '../../common/versioned';
import { divideHalfUp } from '../pricing';
import { couponResource, findCouponByCode } from './queries';
import { type CouponRow, type CouponStatus, type CouponType, couponCodeTaken, couponExpired, couponNotApplicable } from './row';

export interface Redemption {
  /** The code as the store wrote it. */
  code: string;
  discount: number;
  freeShipping: boolean;
}

/** 100.00 % in the hundredths of a percent percentage coupons store. */
const WHOLE_PERCENT = 10_000;

/** Whether the coupon is past its `expires_at` at `now` (it applies up to and including that instant). */
function hasExpired(coupon: CouponRow, now: number): boolean {
  return coupon.expires_at !== null && now > Number(coupon.expires_at);
}

/** Why the coupon does not apply to an order of `subtotal` now, or undefined when it does. */
function refusalOf(coupon: CouponRow, subtotal: number, now: number): string | undefined {
  if (coupon.status !== 'active') return 'it is not active';
  if (coupon.starts_at !== null && now < Number(coupon.starts_at)) return 'it has not started yet';
  if (hasExpired(coupon, now)) return 'it has expired';
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
  const { result } = await changeVersionedWithResult(trx, actor, couponResource, found.id, {
    precondition: anyVersion,
    columns: (current) => {
      const refusal = refusalOf(current, subtotal, actor.now);
      if (refusal !== undefined) throw couponNotApplicable(code, refusal);
      const redemption: Redemption = { code: current.code, discount: discountOf(current, subtotal), freeShipping: Boolean(current.free_shipping) };
      return { columns: { usage_count: current.usage_count + 1 }, result: redemption };
    },
  });
  return result;
}

/** What the merchant's side (`svc coupon create`, the simulator) asks for; amounts in halalas. */
export interface NewCoupon {
  code: string;
  type: CouponType;
  /** Fixed: halalas off. Percentage: hundredths of a percent (`15.00` % is 1500). */
  amountHalalas: number;
  status?: CouponStatus;
  startsAt?: number | null;
  expiresAt?: number | null;
  usageLimit?: number | null;
  minimumOrderHalalas?: number | null;
  freeShipping?: boolean;
}

/** The interface's Coupon schema: codes are upper-case letters, digits, `_` and `-`. */
const CODE_PATTERN = /^[A-Z0-9_-]{3,30}$/;
/** The Money schema's bound: 999,999,999.99 SAR. */
const MAX_HALALAS = 99_999_999_999;
const MAX_USAGE_LIMIT = 1_000_000_000;

/** Every rule a new coupon breaks, as the details of one VALIDATION_FAILED (empty when it keeps them all). */
export function couponProblems(coupon: NewCoupon): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const problem = (field: string, message: string) => problems.push({ location: 'body', field, message });
  if (!CODE_PATTERN.test(coupon.code)) problem('/code', 'must be 3 to 30 upper-case letters, digits, "_" or "-"');
  if (coupon.type !== 'percentage' && coupon.type !== 'fixed') problem('/type', 'must be "percentage" or "fixed"');
  const most = coupon.type === 'percentage' ? WHOLE_PERCENT : MAX_HALALAS;
  // A coupon that only waives shipping takes nothing off the lines (amount 0.00).
  const least = coupon.freeShipping === true ? 0 : 1;
  if (!Number.isSafeInteger(coupon.amountHalalas) || coupon.amountHalalas < least || coupon.amountHalalas > most) {
    const range = coupon.type === 'percentage' ? 'at most 100.00 (percent)' : 'at most 999999999.99 SAR';
    problem('/amount', `must be more than 0.00 (0.00 only with free shipping) and ${range}`);
  }
  const { startsAt, expiresAt, usageLimit, minimumOrderHalalas } = coupon;
  if (startsAt != null && expiresAt != null && expiresAt <= startsAt) problem('/expires_at', 'must be after starts_at');
  if (usageLimit != null && (!Number.isSafeInteger(usageLimit) || usageLimit < 1 || usageLimit > MAX_USAGE_LIMIT)) {
    problem('/usage_limit', `must be a whole number from 1 to ${MAX_USAGE_LIMIT}`);
  }
  if (minimumOrderHalalas != null && (!Number.isSafeInteger(minimumOrderHalalas) || minimumOrderHalalas < 0 || minimumOrderHalalas > MAX_HALALAS)) {
    problem('/minimum_order_amount', 'must be an amount of 0.00 SAR or more');
  }
  return problems;
}

/**
 * Creates a coupon of the store (merchant side: the interface only reads coupons and changes their
 * status). The code is kept as written and unique case-insensitively; no event, as the interface
 * names none for coupons.
 */
export function createCoupon(db: Db, actor: Actor, coupon: NewCoupon): Promise<CouponRow> {
  const problems = couponProblems(coupon);
  if (problems.length > 0) return Promise.reject(new ApiError('VALIDATION_FAILED', 'The coupon is not valid.', { details: problems }));
  return createVersioned(db, actor, couponResource, {
    columns: async (trx) => {
      if (await findCouponByCode(trx, actor.storeId, coupon.code)) throw couponCodeTaken();
      return {
        code: coupon.code,
        code_key: nameKeyOf(coupon.code),
        type: coupon.type,
        amount_halalas: coupon.amountHalalas,
        status: coupon.status ?? 'active',
        starts_at: coupon.startsAt ?? null,
        expires_at: coupon.expiresAt ?? null,
        usage_limit: coupon.usageLimit ?? null,
        usage_count: 0,
        minimum_order_halalas: coupon.minimumOrderHalalas ?? null,
        free_shipping: coupon.freeShipping ?? false,
      };
    },
  });
}

/**
 * `coupons.status`: activates or deactivates the store's coupon and writes nothing else of it.
 * Setting the status it already has changes nothing (no new version, no new `updated_at`); a coupon
 * past its expiry cannot be activated (409 COUPON_EXPIRED, the coupon left as it was), though it can
 * be deactivated. No event, as the interface names none for coupons.
 */
export function setCouponStatus(db: Db, actor: Actor, id: number, status: CouponStatus): Promise<CouponRow> {
  return changeVersioned(db, actor, couponResource, id, {
    precondition: anyVersion,
    unchanged: (current) => current.status === status,
    columns: (current) => {
      if (status === 'active' && hasExpired(current, actor.now)) throw couponExpired(current);
      return { status };
    },
  });
}
