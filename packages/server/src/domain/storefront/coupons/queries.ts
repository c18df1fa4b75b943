import type { Db } from '../../../db/transactions';
import { nameKeyOf } from '../../common/text';
import type { VersionedResource } from '../../common/versioned';
import { type CouponRow, couponCodeTaken, couponNotFound } from './row';

export async function findCoupon(db: Db, storeId: string, id: number): Promise<CouponRow | undefined> {
  return (await db<CouponRow>('coupons').where({ store_id: storeId, id }).first()) as CouponRow | undefined;
}

/** The store's coupon with this code, case-insensitively. */
export async function findCouponByCode(db: Db, storeId: string, code: string): Promise<CouponRow | undefined> {
  return (await db<CouponRow>('coupons')
    .where({ store_id: storeId, code_key: nameKeyOf(code) })
    .first()) as CouponRow | undefined;
}

export const couponResource: VersionedResource<CouponRow> = {
  table: 'coupons',
  find: findCoupon,
  notFound: couponNotFound,
  uniqueConflict: (index) => (index.includes('code_key') ? couponCodeTaken() : undefined),
};
