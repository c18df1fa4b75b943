import request from 'supertest';
import { toIso } from '../../../src/core/clock';
import { createCoupon, type NewCoupon } from '../../../src/domain/storefront/coupons/changes';
import { cancelOrder, placeOrder } from '../../../src/domain/storefront/orders/changes';
import { expectError } from '../../support/auth-steps';
import { HUGE_ID, MALFORMED_IDS, tokenWithScopes } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { walkList, withCursor } from '../../support/list-walk';
import { eventsOf, forSale, openShop, type Shop } from '../../support/storefront-fixtures';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

type Query = Record<string, string | number>;

interface CouponBody {
  id: number;
  code: string;
  status: string;
  usage_count: number;
  updated_at: string;
  [field: string]: unknown;
}
interface ListBody {
  data: CouponBody[];
  meta: { has_more: boolean; limit: number; next_cursor: string | null };
}

describe.each(testDatabases())('coupons through HTTP on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });
  const couponsPath = (shop: Shop, id?: number | string, status = false) =>
    `/stores/${shop.storeId}/v1/coupons${id === undefined ? '' : `/${id}`}${status ? '/status' : ''}`;
  const get = (path: string, token: string, query: Query = {}) => request(h.app).get(path).query(query).set('Authorization', `Bearer ${token}`);

  /** A coupon made as the merchant's side makes it, a second after the last step. */
  async function couponOf(shop: Shop, coupon: NewCoupon): Promise<number> {
    h.clock.advance(1000);
    return (await createCoupon(h.db, shop.actor(), coupon)).id;
  }

  /** Every coupon of the list for `query`, walking its pages; the number of pages served. */
  async function walk(shop: Shop, token: string, query: Query): Promise<{ ids: number[]; pages: number }> {
    const walk = await walkList<{ id: number }>((cursor) => get(couponsPath(shop), token, withCursor(query, cursor)));
    return { ids: walk.items.map((coupon) => coupon.id), pages: walk.pages.length };
  }

  describe('coupons.list and coupons.get', () => {
    let shop: Shop;
    let other: Shop;
    const ids = { ramadan: 0, welcome: 0, summer: 0, eid: 0, shipFree: 0, othersRamadan: 0 };
    const createdAt = { ramadan: 0, welcome: 0 };
    const ramadanWindow = { starts: 0, expires: 0 };
    const tokens = { reader: '', cartsOnly: '', otherStore: '', orders: '' };
    let oud: number;

    beforeAll(async () => {
      shop = await openShop(h);
      other = await openShop(h);
      ramadanWindow.starts = h.clock.now() + DAY;
      ramadanWindow.expires = ramadanWindow.starts + 30 * DAY - 1000;
      ids.ramadan = await couponOf(shop, {
        code: 'RAMADAN15',
        type: 'percentage',
        amountHalalas: 1500,
        startsAt: ramadanWindow.starts,
        expiresAt: ramadanWindow.expires,
        usageLimit: 500,
        minimumOrderHalalas: 20_000,
      });
      createdAt.ramadan = h.clock.now();
      ids.welcome = await couponOf(shop, { code: 'WELCOME50', type: 'fixed', amountHalalas: 5_000, minimumOrderHalalas: 30_000, freeShipping: true });
      createdAt.welcome = h.clock.now();
      ids.summer = await couponOf(shop, { code: 'SUMMER-10', type: 'percentage', amountHalalas: 1_000, status: 'inactive' });
      ids.eid = await couponOf(shop, { code: 'EID_20', type: 'fixed', amountHalalas: 2_000, expiresAt: h.clock.now() - DAY });
      ids.shipFree = await couponOf(shop, { code: 'SHIPFREE', type: 'fixed', amountHalalas: 0, freeShipping: true, status: 'inactive' });
      ids.othersRamadan = await couponOf(other, { code: 'RAMADAN15', type: 'percentage', amountHalalas: 2_000 });
      oud = await forSale(h, shop, 34_900, { quantity: 100 });
      tokens.reader = await tokenWithScopes(h, shop.store, ['coupons:read']);
      tokens.cartsOnly = await tokenWithScopes(h, shop.store, ['carts:read', 'orders:read']);
      tokens.otherStore = await tokenWithScopes(h, other.store, ['coupons:read']);
      tokens.orders = await tokenWithScopes(h, shop.store, ['orders:read']);
    });

    const all = () => [ids.ramadan, ids.welcome, ids.summer, ids.eid, ids.shipFree];

    it('lists every coupon of the store by ascending id, none of another store, each as coupons.get answers it', async () => {
      const response = await get(couponsPath(shop), tokens.reader);
      expect(response.status).toBe(200);
      const body = response.body as ListBody;
      expect(body.data.map((coupon) => coupon.id)).toEqual(all());
      expect(body.meta).toEqual({ request_id: response.headers['x-request-id'], has_more: false, limit: 25, next_cursor: null, consistency: 'live_keyset' });
      for (const coupon of body.data) {
        const read = await get(couponsPath(shop, coupon.id), tokens.reader);
        expect(read.status).toBe(200);
        expect(read.body.data).toEqual(coupon);
        expect(read.body.meta).toEqual({ request_id: read.headers['x-request-id'] });
      }
    });

    it('answers a percentage coupon with its percent, dates, limit, minimum and usage', async () => {
      expect((await get(couponsPath(shop, ids.ramadan), tokens.reader)).body.data).toEqual({
        id: ids.ramadan,
        code: 'RAMADAN15',
        type: 'percentage',
        amount: '15.00',
        status: 'active',
        starts_at: toIso(ramadanWindow.starts),
        expires_at: toIso(ramadanWindow.expires),
        usage_limit: 500,
        usage_count: 0,
        minimum_order_amount: '200.00',
        free_shipping: false,
        created_at: toIso(createdAt.ramadan),
        updated_at: toIso(createdAt.ramadan),
      });
    });

    it('answers a fixed free-shipping coupon without dates or limit, and a shipping-only one of 0.00', async () => {
      expect((await get(couponsPath(shop, ids.welcome), tokens.reader)).body.data).toEqual({
        id: ids.welcome,
        code: 'WELCOME50',
        type: 'fixed',
        amount: '50.00',
        status: 'active',
        starts_at: null,
        expires_at: null,
        usage_limit: null,
        usage_count: 0,
        minimum_order_amount: '300.00',
        free_shipping: true,
        created_at: toIso(createdAt.welcome),
        updated_at: toIso(createdAt.welcome),
      });
      expect((await get(couponsPath(shop, ids.shipFree), tokens.reader)).body.data).toMatchObject({
        amount: '0.00',
        free_shipping: true,
        minimum_order_amount: null,
        status: 'inactive',
      });
    });

    it.each<[string, Query, () => number[]]>([
      ['status=active', { status: 'active' }, () => [ids.ramadan, ids.welcome, ids.eid]],
      ['status=inactive', { status: 'inactive' }, () => [ids.summer, ids.shipFree]],
      ['search in another case', { search: 'ramadan' }, () => [ids.ramadan]],
      ['search for part of a code', { search: 'e' }, () => [ids.welcome, ids.summer, ids.eid, ids.shipFree]],
      ['search for "-", taken as text', { search: '-' }, () => [ids.summer]],
      ['search for "_", taken as text, not as any character', { search: '_' }, () => [ids.eid]],
      ['search for "%", which no code holds', { search: '%' }, () => []],
      ['search no code matches', { search: 'BLACKFRIDAY' }, () => []],
      ['status and search together', { status: 'inactive', search: 'ship' }, () => [ids.shipFree]],
      ['status and search that match apart but not together', { status: 'active', search: 'summer' }, () => []],
    ])('filters by %s', async (_name, query, expected) => {
      expect((await walk(shop, tokens.reader, query)).ids).toEqual(expected());
    });

    it('shows each order that used the coupon in usage_count, a cancelled one too', async () => {
      const place = () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], couponCode: 'welcome50' });
      h.clock.advance(1000);
      const first = await place();
      await place();
      await cancelOrder(h.db, shop.actor(), first.id);
      // An order without the coupon, and one refused for another coupon's rules, count nothing here.
      await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] });
      await expect(
        placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], couponCode: 'SUMMER-10' }),
      ).rejects.toMatchObject({ code: 'COUPON_NOT_APPLICABLE' });
      const read = (await get(couponsPath(shop, ids.welcome), tokens.reader)).body.data as CouponBody;
      expect(read.usage_count).toBe(2);
      expect(((await get(couponsPath(shop, ids.summer), tokens.reader)).body.data as CouponBody).usage_count).toBe(0);
      const order = await get(`/stores/${shop.storeId}/v1/orders/${first.id}`, tokens.orders);
      expect(order.body.data).toMatchObject({ coupon_code: 'WELCOME50', amounts: { discount: '50.00', shipping: '0.00' } });
    });

    it.each([1, 2, 4])('walks the coupons in pages of %i, a filter too', async (limit) => {
      expect(await walk(shop, tokens.reader, { limit })).toEqual({ ids: all(), pages: Math.ceil(5 / limit) });
      expect(await walk(shop, tokens.reader, { limit, status: 'active' })).toEqual({ ids: [ids.ramadan, ids.welcome, ids.eid], pages: Math.ceil(3 / limit) });
    });

    it('is 400 INVALID_CURSOR for a cursor with other filters, of another store or of another list', async () => {
      const first = (await get(couponsPath(shop), tokens.reader, { limit: 1, status: 'active' })).body as ListBody;
      const cursor = first.meta.next_cursor as string;
      expect(cursor).toEqual(expect.any(String));
      for (const query of [{}, { status: 'inactive' }, { status: 'active', search: 'A' }, { search: 'A' }] as Query[]) {
        expectError(await get(couponsPath(shop), tokens.reader, { ...query, cursor }), 400, 'INVALID_CURSOR');
      }
      expectError(await get(couponsPath(other), tokens.otherStore, { status: 'active', cursor }), 400, 'INVALID_CURSOR');
      expectError(await get(`/stores/${shop.storeId}/v1/abandoned-carts`, tokens.cartsOnly, { cursor }), 400, 'INVALID_CURSOR');
      expectError(await get(couponsPath(shop), tokens.reader, { status: 'active', cursor: 'not-a-cursor' }), 400, 'INVALID_CURSOR');
      // Its own filters take it, whatever the limit.
      const next = (await get(couponsPath(shop), tokens.reader, { status: 'active', limit: 10, cursor })).body as ListBody;
      expect(next.data.map((coupon) => coupon.id)).toEqual([ids.welcome, ids.eid]);
    });

    it.each<[string, Query]>([
      ['an unknown status', { status: 'expired' }],
      ['a status in capitals', { status: 'ACTIVE' }],
      ['an empty status', { status: '' }],
      ['an empty search', { search: '' }],
      ['a search of 101 characters', { search: 'A'.repeat(101) }],
      ['a bad status beside a good search', { status: 'on', search: 'EID' }],
    ])('is 400 INVALID_FILTER for %s', async (_why, query) => {
      expectError(await get(couponsPath(shop), tokens.reader, query), 400, 'INVALID_FILTER');
    });

    it('takes a search of 100 characters', async () => {
      expect((await walk(shop, tokens.reader, { search: 'A'.repeat(100) })).ids).toEqual([]);
    });

    it('is 422 UNKNOWN_FIELD for a filter it does not take', async () => {
      expectError(await get(couponsPath(shop), tokens.reader, { type: 'fixed' }), 422, 'UNKNOWN_FIELD');
      expectError(await get(couponsPath(shop), tokens.reader, { expires_before: '2027-01-01T00:00:00Z' }), 422, 'UNKNOWN_FIELD');
    });

    it("is 404 NOT_FOUND for another store's coupon, even with the same code, and for ids no coupon has", async () => {
      for (const id of [ids.othersRamadan, Math.max(...all(), ids.othersRamadan) + 1000, 2_147_483_647, HUGE_ID, '999999999999999']) {
        expectError(await get(couponsPath(shop, id), tokens.reader), 404, 'NOT_FOUND');
      }
    });

    it("is 404 STORE_NOT_FOUND for another store's token on this store's path", async () => {
      expectError(await get(couponsPath(shop), tokens.otherStore), 404, 'STORE_NOT_FOUND');
      expectError(await get(couponsPath(shop, ids.ramadan), tokens.otherStore), 404, 'STORE_NOT_FOUND');
    });

    it.each(MALFORMED_IDS)('is 400 for the malformed id %s', async (id) => {
      expectError(await get(couponsPath(shop, id), tokens.reader), 400, 'VALIDATION_FAILED');
    });

    it('needs coupons:read (403 INSUFFICIENT_SCOPE naming it)', async () => {
      for (const response of [await get(couponsPath(shop), tokens.cartsOnly), await get(couponsPath(shop, ids.ramadan), tokens.cartsOnly)]) {
        expectError(response, 403, 'INSUFFICIENT_SCOPE');
        expect(response.headers['www-authenticate']).toContain('coupons:read');
      }
    });
  });

  describe('more coupons than a page', () => {
    let shop: Shop;
    let token = '';
    const ids: number[] = [];
    const inactive: number[] = [];

    beforeAll(async () => {
      shop = await openShop(h);
      for (let index = 0; index < 30; index += 1) {
        const status = index % 4 === 0 ? 'inactive' : 'active';
        const id = await couponOf(shop, { code: `BULK-${String(index).padStart(2, '0')}`, type: 'fixed', amountHalalas: 100 + index, status });
        ids.push(id);
        if (status === 'inactive') inactive.push(id);
      }
      token = await tokenWithScopes(h, shop.store, ['coupons:read']);
    });

    it('walks every coupon once, in id order, 25 to a page by default, and a filter in small pages', async () => {
      expect(await walk(shop, token, {})).toEqual({ ids, pages: 2 });
      expect(await walk(shop, token, { status: 'inactive', limit: 3 })).toEqual({ ids: inactive, pages: 3 });
      expect(await walk(shop, token, { search: 'bulk-1', limit: 4 })).toEqual({ ids: ids.slice(10, 20), pages: 3 });
    });
  });

  describe('coupons.status', () => {
    let shop: Shop;
    let other: Shop;
    let oud: number;
    const tokens = { writer: '', reader: '', otherStore: '', orders: '' };

    beforeAll(async () => {
      shop = await openShop(h);
      other = await openShop(h);
      oud = await forSale(h, shop, 34_900, { quantity: 100 });
    });

    beforeEach(async () => {
      // Tokens live 15 minutes; the tests move the clock.
      h.clock.advance(MINUTE);
      tokens.writer = await tokenWithScopes(h, shop.store, ['coupons:read', 'coupons.status:write']);
      tokens.reader = await tokenWithScopes(h, shop.store, ['coupons:read']);
      tokens.otherStore = await tokenWithScopes(h, other.store, ['coupons:read', 'coupons.status:write']);
      tokens.orders = await tokenWithScopes(h, shop.store, ['orders:read']);
    });

    let codes = 0;
    /** A coupon of `shop` with a fresh code, 10 % off. */
    const newCoupon = (change: Partial<NewCoupon> = {}) => {
      codes += 1;
      return couponOf(shop, { code: `STATUS-${codes}`, type: 'percentage', amountHalalas: 1_000, ...change });
    };
    const patch = (id: number | string, body: unknown, token = tokens.writer, store = shop) =>
      request(h.app)
        .patch(couponsPath(store, id, true))
        .set('Authorization', `Bearer ${token}`)
        .send(body as object);
    const readCoupon = async (id: number) => (await get(couponsPath(shop, id), tokens.reader)).body.data as CouponBody;
    const versionOf = async (id: number) => Number((await h.db('coupons').where({ id }).first('resource_version')).resource_version);
    const eventCount = async () => (await eventsOf(h.db, shop.storeId)).length;

    it.each<[string, 'active' | 'inactive', 'active' | 'inactive']>([
      ['deactivates an active coupon', 'active', 'inactive'],
      ['activates an inactive coupon', 'inactive', 'active'],
    ])('%s, changing nothing else, at a new version, without an event', async (_name, from, to) => {
      const id = await newCoupon({ status: from, usageLimit: 10, minimumOrderHalalas: 5_000, expiresAt: h.clock.now() + DAY });
      const before = await readCoupon(id);
      const events = await eventCount();
      h.clock.advance(1000);
      const response = await patch(id, { status: to });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({ ...before, status: to, updated_at: toIso(h.clock.now()) });
      expect(response.body.meta).toEqual({ request_id: response.headers['x-request-id'] });
      expect(await readCoupon(id)).toEqual(response.body.data);
      expect(await versionOf(id)).toBe(2);
      expect(await eventCount()).toBe(events);
    });

    it.each<['active' | 'inactive']>([['active'], ['inactive']])('changes nothing when the coupon is %s already', async (status) => {
      const id = await newCoupon({ status });
      const before = await readCoupon(id);
      h.clock.advance(1000);
      const response = await patch(id, { status });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual(before);
      expect(await versionOf(id)).toBe(1);
    });

    it('refuses to activate an expired coupon (409 COUPON_EXPIRED) and leaves it as it was', async () => {
      const id = await newCoupon({ status: 'inactive', expiresAt: h.clock.now() + MINUTE });
      h.clock.advance(MINUTE + 1);
      const before = await readCoupon(id);
      const response = await patch(id, { status: 'active' });
      expectError(response, 409, 'COUPON_EXPIRED');
      expect(response.body.error.message).toContain(`STATUS-${codes}`);
      expect(await readCoupon(id)).toEqual(before);
      expect(await versionOf(id)).toBe(1);
    });

    it('activates a coupon at the very instant it expires (the expiry is inclusive), and one that has not started yet', async () => {
      const future = await newCoupon({ status: 'inactive', startsAt: h.clock.now() + DAY });
      // Made a second from now, expiring a second after that: the very instant the clock then shows.
      const expiring = await newCoupon({ status: 'inactive', expiresAt: h.clock.now() + 2000 });
      h.clock.advance(1000);
      expect((await patch(expiring, { status: 'active' })).body.data).toMatchObject({ status: 'active' });
      expect((await patch(future, { status: 'active' })).body.data).toMatchObject({ status: 'active' });
    });

    it('deactivates an expired coupon; setting an expired active coupon active changes nothing', async () => {
      const id = await newCoupon({ expiresAt: h.clock.now() + 1000 });
      h.clock.advance(2000);
      const unchanged = await patch(id, { status: 'active' });
      expect(unchanged.status).toBe(200);
      expect(unchanged.body.data).toMatchObject({ status: 'active' });
      expect(await versionOf(id)).toBe(1);
      const deactivated = await patch(id, { status: 'inactive' });
      expect(deactivated.status).toBe(200);
      expect(deactivated.body.data).toMatchObject({ status: 'inactive' });
      expectError(await patch(id, { status: 'active' }), 409, 'COUPON_EXPIRED');
      expect((await readCoupon(id)).status).toBe('inactive');
    });

    it('an inactive coupon stops applying at checkout and applies again once active; orders that used it keep their discount', async () => {
      const id = await newCoupon();
      const code = (await readCoupon(id)).code;
      const place = () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], couponCode: code });
      const used = await place();
      expect((await patch(id, { status: 'inactive' })).status).toBe(200);
      await expect(place()).rejects.toMatchObject({ code: 'COUPON_NOT_APPLICABLE' });
      const order = await get(`/stores/${shop.storeId}/v1/orders/${used.id}`, tokens.orders);
      expect(order.body.data).toMatchObject({ coupon_code: code, amounts: { discount: '34.90' } });
      expect((await patch(id, { status: 'active' })).status).toBe(200);
      await place();
      expect(await readCoupon(id)).toMatchObject({ status: 'active', usage_count: 2 });
    });

    it.each<[string, unknown]>([
      ['an unknown status', { status: 'expired' }],
      ['a status in capitals', { status: 'ACTIVE' }],
      ['no status', {}],
      ['a status that is not a string', { status: true }],
      ['a null status', { status: null }],
      ['a body that is an array', [{ status: 'active' }]],
    ])('is 400 VALIDATION_FAILED for %s, and changes nothing', async (_why, body) => {
      const id = await newCoupon({ status: 'inactive' });
      expectError(await patch(id, body), 400, 'VALIDATION_FAILED');
      expect(await versionOf(id)).toBe(1);
    });

    it('is 422 UNKNOWN_FIELD for a field beside the status (nothing else of a coupon changes here)', async () => {
      const id = await newCoupon({ status: 'inactive' });
      expectError(await patch(id, { status: 'active', usage_limit: 5 }), 422, 'UNKNOWN_FIELD');
      expect(await readCoupon(id)).toMatchObject({ status: 'inactive', usage_limit: null });
    });

    it('is 415 for a body that is not JSON', async () => {
      const id = await newCoupon({ status: 'inactive' });
      const response = await request(h.app)
        .patch(couponsPath(shop, id, true))
        .set('Authorization', `Bearer ${tokens.writer}`)
        .set('Content-Type', 'text/plain')
        .send('status=active');
      expectError(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it("is 404 NOT_FOUND for another store's coupon and ids no coupon has; another store's token is STORE_NOT_FOUND", async () => {
      const othersCoupon = (await createCoupon(h.db, other.actor(), { code: 'OTHER', type: 'fixed', amountHalalas: 100, status: 'inactive' })).id;
      for (const id of [othersCoupon, 2_147_483_647, HUGE_ID]) expectError(await patch(id, { status: 'active' }), 404, 'NOT_FOUND');
      expect(await h.db('coupons').where({ id: othersCoupon }).first('status', 'resource_version')).toEqual({ status: 'inactive', resource_version: 1 });
      const mine = await newCoupon();
      expectError(await patch(mine, { status: 'inactive' }, tokens.otherStore), 404, 'STORE_NOT_FOUND');
      expect((await readCoupon(mine)).status).toBe('active');
    });

    it.each(MALFORMED_IDS)('is 400 for the malformed id %s', async (id) => {
      expectError(await patch(id, { status: 'active' }), 400, 'VALIDATION_FAILED');
    });

    it('needs coupons.status:write (403 INSUFFICIENT_SCOPE naming it), coupons:read is not enough', async () => {
      const id = await newCoupon();
      const response = await patch(id, { status: 'inactive' }, tokens.reader);
      expectError(response, 403, 'INSUFFICIENT_SCOPE');
      expect(response.headers['www-authenticate']).toContain('coupons.status:write');
      expect((await readCoupon(id)).status).toBe('active');
    });
  });
});
