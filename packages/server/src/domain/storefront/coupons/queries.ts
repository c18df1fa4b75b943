import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, syncWalkOf, walkOrder } from '../../../core/paging';
import type { Db } from '../../../db/transactions';
import { likeContaining, nameKeyOf } from '../../common/text';
import type { VersionedResource } from '../../common/versioned';
import { type Coupon, type CouponRow, type CouponStatus, couponCodeTaken, couponNotFound } from './row';
import { couponView } from './view';

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

/** The store's coupon as the interface shows it, or 404 (another store's too: no existence oracle). */
export async function getCoupon(db: Db, storeId: string, id: number): Promise<Coupon> {
  const row = await findCoupon(db, storeId, id);
  if (!row) throw couponNotFound();
  return couponView(row);
}

/** The filters of `coupons.list`, as the request gives them (the spec validator has checked their form). */
export interface CouponFilters {
  status?: CouponStatus | undefined;
  /** Text the code contains, case-insensitively (1 to 100 characters). */
  search?: string | undefined;
  /** Only coupons with `updated_at` after this instant (RFC 3339); the walk is then by `(updated_at, id)`. */
  updated_since?: string | undefined;
}

/**
 * `coupons.list`: one keyset page of the store's coupons matching every filter, by ascending id
 * (given `updated_since`, by `updated_at` and id); the filters are sealed in the cursor. Status has
 * its `(store_id, status, id)` index; the search reads the lower-cased code the uniqueness rule
 * already keeps.
 */
export function listCoupons(db: Db, storeId: string, filters: CouponFilters, request: ListRequest): Promise<Page<Coupon>> {
  const { walk, updatedAfter } = syncWalkOf(filters.updated_since);
  const read = (after: KeysetAfter | undefined, take: number) => {
    let query = db<CouponRow>('coupons').where({ store_id: storeId });
    if (filters.status !== undefined) query = query.where('status', filters.status);
    if (filters.search !== undefined) query = query.whereRaw("code_key like ? escape '!'", [likeContaining(nameKeyOf(filters.search))]);
    if (updatedAfter !== undefined) query = query.where('updated_at', '>', updatedAfter);
    if (after !== undefined) query = query.whereRaw(...boundAfter(walk, after));
    return query.orderByRaw(walkOrder(walk)).limit(take) as Promise<CouponRow[]>;
  };
  return keysetPage(request, { list: 'coupons.list', storeId, filters: { ...filters } }, walk, read, (rows) => rows.map(couponView));
}
