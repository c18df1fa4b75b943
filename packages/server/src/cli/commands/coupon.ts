import { Command, Option } from 'commander';
import { ApiError } from '../../core/errors';
import { createCoupon, type NewCoupon } from '../../domain/storefront/coupons/changes';
import type { CouponRow, CouponType } from '../../domain/storefront/coupons/row';
import { couponView } from '../../domain/storefront/coupons/view';
import { findStore, PlatformError } from '../../platform/stores';
import type { Actions, Run } from '../context';
import { keyValues } from '../output';
import { amount, count, instant, uuid } from '../values';

const COUPON_TYPES: readonly CouponType[] = ['percentage', 'fixed'];

interface CreateOptions {
  store: string;
  code: string;
  type: CouponType;
  amount: number;
  startsAt?: number;
  expiresAt?: number;
  usageLimit?: number;
  minimumOrder?: number;
  freeShipping?: boolean;
  inactive?: boolean;
}

/** The flag a field of the domain's refusal came from, so the message names what the operator typed. */
const COUPON_FLAGS: Readonly<Record<string, string>> = {
  '/code': '--code',
  '/type': '--type',
  '/amount': '--amount',
  '/starts_at': '--starts-at',
  '/expires_at': '--expires-at',
  '/usage_limit': '--usage-limit',
  '/minimum_order_amount': '--minimum-order',
};

/** The domain's refusal in the operator's words: each rule broken, by flag, or the refusal's own message. */
function couponRefusal(error: ApiError): PlatformError {
  const details = error.extras.details ?? [];
  if (details.length === 0) return new PlatformError(error.message);
  const problems = details.map((detail) => `${(detail.field !== undefined && COUPON_FLAGS[detail.field]) || detail.field} ${detail.message}`);
  return new PlatformError(`coupon not created: ${problems.join('; ')}`);
}

const newCoupon = (options: CreateOptions): NewCoupon => ({
  code: options.code,
  type: options.type,
  amountHalalas: options.amount,
  status: options.inactive ? 'inactive' : 'active',
  startsAt: options.startsAt ?? null,
  expiresAt: options.expiresAt ?? null,
  usageLimit: options.usageLimit ?? null,
  minimumOrderHalalas: options.minimumOrder ?? null,
  freeShipping: options.freeShipping === true,
});

const couponAmountCell = (coupon: CouponRow, shown: string): string => (coupon.type === 'percentage' ? `${shown} %` : `${shown} SAR`);

const couponCreate: Run<CreateOptions> = async (context, { options }) => {
  const storeId = options.store;
  if (!(await findStore(context.deps.db, storeId))) throw new PlatformError(`No store ${storeId}`);
  let created: CouponRow;
  try {
    created = await createCoupon(context.deps.db, { storeId, installationId: null, now: context.deps.clock.now() }, newCoupon(options));
  } catch (error) {
    throw error instanceof ApiError ? couponRefusal(error) : error;
  }
  const view = couponView(created);
  return {
    json: view,
    lines: keyValues([
      ['coupon_id', String(view.id)],
      ['store_id', storeId],
      ['code', view.code],
      ['type', view.type],
      ['amount', couponAmountCell(created, view.amount)],
      ['status', view.status],
      ['starts_at', view.starts_at ?? '-'],
      ['expires_at', view.expires_at ?? '-'],
      ['usage_limit', view.usage_limit === null ? '-' : String(view.usage_limit)],
      ['minimum_order', view.minimum_order_amount === null ? '-' : `${view.minimum_order_amount} SAR`],
      ['free_shipping', view.free_shipping ? 'yes' : 'no'],
    ]),
  };
};

/** `svc coupon create`: apps read coupons and switch them on and off; only the merchant side creates them. */
export function couponCommands(actions: Actions): Command {
  const coupon = new Command('coupon');
  coupon
    .command('create')
    .description(
      'Create a discount coupon in a store: --amount is the percent (15.00) or the SAR off (50.00); dates are RFC 3339; active unless --inactive. Apps read coupons and change their status; only the merchant side creates them.',
    )
    .requiredOption('--store <storeId>', '', uuid)
    .requiredOption('--code <CODE>')
    .addOption(new Option('--type <type>').choices(COUPON_TYPES).makeOptionMandatory())
    .requiredOption('--amount <amount>', '', amount)
    .option('--starts-at <date-time>', '', instant)
    .option('--expires-at <date-time>', '', instant)
    .option('--usage-limit <n>', '', count)
    .option('--minimum-order <amount>', '', amount)
    .option('--free-shipping')
    .option('--inactive')
    .action(actions.writes(couponCreate));
  return coupon;
}
