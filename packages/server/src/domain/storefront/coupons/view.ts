import { toIso } from '../../../core/clock';
import { fromHalalas } from '../../../core/money';
import type { Coupon, CouponRow } from './row';

const isoOrNull = (instant: number | null): string | null => (instant === null ? null : toIso(Number(instant)));

/**
 * The spec's Coupon. A percentage coupon's hundredths of a percent print like halalas (1500 is
 * `"15.00"` percent), so one formatter serves both types.
 */
export function couponView(row: Readonly<CouponRow>): Coupon {
  return {
    id: row.id,
    code: row.code,
    type: row.type,
    amount: fromHalalas(Number(row.amount_halalas)),
    status: row.status,
    starts_at: isoOrNull(row.starts_at),
    expires_at: isoOrNull(row.expires_at),
    usage_limit: row.usage_limit,
    usage_count: row.usage_count,
    minimum_order_amount: row.minimum_order_halalas === null ? null : fromHalalas(Number(row.minimum_order_halalas)),
    free_shipping: Boolean(row.free_shipping),
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}
