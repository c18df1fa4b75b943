import { couponProblems, createCoupon, type NewCoupon } from '../../../src/domain/storefront/coupons/changes';
import { findCouponByCode } from '../../../src/domain/storefront/coupons/queries';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { eventsOf, openShop, type Shop } from '../../support/storefront-fixtures';

const fieldsOf = (coupon: NewCoupon) => couponProblems(coupon).map((problem) => problem.field);

describe('coupon rules', () => {
  const valid: NewCoupon = { code: 'RAMADAN15', type: 'percentage', amountHalalas: 1500 };

  it('accepts a plain percentage, a fixed amount and a free-shipping-only coupon', () => {
    expect(fieldsOf(valid)).toEqual([]);
    expect(fieldsOf({ code: 'SAVE-50', type: 'fixed', amountHalalas: 5000, usageLimit: 1, minimumOrderHalalas: 0 })).toEqual([]);
    expect(fieldsOf({ code: 'SHIP_FREE', type: 'fixed', amountHalalas: 0, freeShipping: true })).toEqual([]);
  });

  it.each([
    ['a lower-case code', { code: 'ramadan15' }, '/code'],
    ['a two-character code', { code: 'AB' }, '/code'],
    ['a 31-character code', { code: 'A'.repeat(31) }, '/code'],
    ['a code with a space', { code: 'EID 20' }, '/code'],
    ['a percentage over 100.00', { amountHalalas: 10_001 }, '/amount'],
    ['a zero amount without free shipping', { amountHalalas: 0 }, '/amount'],
    ['a fractional amount', { amountHalalas: 12.5 }, '/amount'],
    ['an expiry at the start', { startsAt: 1000, expiresAt: 1000 }, '/expires_at'],
    ['a usage limit of 0', { usageLimit: 0 }, '/usage_limit'],
    ['a negative minimum', { minimumOrderHalalas: -1 }, '/minimum_order_amount'],
  ])('refuses %s', (_name, change, field) => {
    expect(fieldsOf({ ...valid, ...change } as NewCoupon)).toEqual([field]);
  });
});

describe.each(testDatabases())('createCoupon on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let shop: Shop;

  beforeEach(async () => {
    h.clock.advance(60_000);
    shop = await openShop(h);
  });

  it('stores the coupon as asked, unused, at version 1, without an event', async () => {
    const before = (await eventsOf(h.db, shop.storeId)).length;
    const created = await createCoupon(h.db, shop.actor(), {
      code: 'EID-20',
      type: 'fixed',
      amountHalalas: 2000,
      startsAt: h.clock.now(),
      expiresAt: h.clock.now() + 86_400_000,
      usageLimit: 100,
      minimumOrderHalalas: 10_000,
      freeShipping: true,
    });
    expect(created).toMatchObject({ code: 'EID-20', type: 'fixed', status: 'active', usage_count: 0, usage_limit: 100, resource_version: 1 });
    expect(Number(created.amount_halalas)).toBe(2000);
    expect(Boolean(created.free_shipping)).toBe(true);
    expect((await findCouponByCode(h.db, shop.storeId, 'eid-20'))?.id).toBe(created.id);
    expect((await eventsOf(h.db, shop.storeId)).length).toBe(before);
  });

  it('refuses a code the store already has, in any case, and keeps the first', async () => {
    await createCoupon(h.db, shop.actor(), { code: 'WELCOME', type: 'percentage', amountHalalas: 1000 });
    const second = createCoupon(h.db, shop.actor(), { code: 'WELCOME', type: 'fixed', amountHalalas: 500 });
    await expect(second).rejects.toMatchObject({ code: 'VALIDATION_FAILED', extras: { details: [{ field: '/code' }] } });
    const coupons = await h.db('coupons').where({ store_id: shop.storeId });
    expect(coupons.map((coupon) => Number(coupon.amount_halalas))).toEqual([1000]);
  });

  it('lets another store use the same code', async () => {
    const other = await openShop(h);
    await createCoupon(h.db, shop.actor(), { code: 'WELCOME', type: 'percentage', amountHalalas: 1000 });
    await expect(createCoupon(h.db, other.actor(), { code: 'WELCOME', type: 'percentage', amountHalalas: 1000 })).resolves.toMatchObject({ code: 'WELCOME' });
  });

  it('writes nothing for an invalid coupon', async () => {
    await expect(createCoupon(h.db, shop.actor(), { code: 'x', type: 'percentage', amountHalalas: 0 })).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(await h.db('coupons').where({ store_id: shop.storeId })).toEqual([]);
  });
});
