import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import { ApiError, invalidBodyField } from '../../../core/errors';

export type Coupon = components['schemas']['Coupon'];
export type CouponType = components['schemas']['CouponType'];
export type CouponStatus = components['schemas']['CouponStatus'];

/** A `coupons` row as both databases return it (SQLite gives `free_shipping` as 0/1). */
export interface CouponRow {
  id: number;
  store_id: string;
  code: string;
  code_key: string;
  type: CouponType;
  /** Fixed: halalas off. Percentage: hundredths of a percent (`10.00` % is 1000). */
  amount_halalas: number;
  status: CouponStatus;
  starts_at: number | null;
  expires_at: number | null;
  usage_limit: number | null;
  usage_count: number;
  minimum_order_halalas: number | null;
  free_shipping: boolean | number;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

export const couponNotFound = () => new ApiError('NOT_FOUND', 'No coupon with that id in this store.');

export const couponNotApplicable = (code: string, reason: string) =>
  new ApiError('COUPON_NOT_APPLICABLE', `The coupon "${code}" does not apply: ${reason}.`, {
    details: [{ location: 'body', field: '/coupon_code', message: reason }],
  });

/** A coupon code is the shopper's name for it: one coupon per code in a store, case-insensitively. */
export const couponCodeTaken = () => invalidBodyField('/code', 'is the code of another coupon of the store');

/** Activation refused: the coupon could never apply again, so turning it on would mislead the merchant. */
export const couponExpired = (coupon: Pick<CouponRow, 'code' | 'expires_at'>) =>
  new ApiError('COUPON_EXPIRED', `Coupon ${coupon.code} expired at ${toIso(Number(coupon.expires_at))}: it cannot be activated.`);
