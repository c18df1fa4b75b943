import request from 'supertest';
import { toIso } from '../../../src/core/clock';
import { abandonCart, recoverCart } from '../../../src/domain/storefront/carts/changes';
import { expectError } from '../../support/auth-steps';
import { HUGE_ID, MALFORMED_IDS, tokenWithScopes } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { walkList, withCursor } from '../../support/list-walk';
import { forSale, openShop, type Shop } from '../../support/storefront-fixtures';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

type Query = Record<string, string | number>;

interface CartBody {
  id: number;
  customer: Record<string, unknown>;
  items: Array<Record<string, unknown>>;
  subtotal: string;
  total: string;
  checkout_url: string;
  age_minutes: number;
  recovered_order_id: number | null;
  created_at: string;
  updated_at: string;
}
interface ListBody {
  data: CartBody[];
  meta: { has_more: boolean; limit: number; next_cursor: string | null };
}

describe.each(testDatabases())('abandoned carts read through HTTP on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });
  const cartsPath = (shop: Shop, id?: number | string) => `/stores/${shop.storeId}/v1/abandoned-carts${id === undefined ? '' : `/${id}`}`;
  const get = (path: string, token: string, query: Query = {}) => request(h.app).get(path).query(query).set('Authorization', `Bearer ${token}`);

  /** Every cart of the list for `query`, walking its pages; the number of pages served. */
  async function walk(shop: Shop, token: string, query: Query): Promise<{ ids: number[]; pages: number }> {
    const walk = await walkList<{ id: number }>((cursor) => get(cartsPath(shop), token, withCursor(query, cursor)));
    return { ids: walk.items.map((cart) => cart.id), pages: walk.pages.length };
  }

  describe('a store with open and recovered carts', () => {
    let shop: Shop;
    let other: Shop;
    let oud: number;
    let musk: number;
    /** `single`: Noura's, one oud; `bulk`: Abdullah's (no contact details), four musks; `recovered`: Noura's, ordered an hour later. */
    const carts = { single: 0, bulk: 0, recovered: 0 };
    const abandonedAt = { single: 0, bulk: 0, recovered: 0 };
    let recoveredOrder = 0;
    let recoveredAt = 0;
    let othersCart = 0;
    const tokens = { reader: '', contacts: '', orders: '', customersOnly: '', ordersOnly: '', otherStore: '' };

    beforeAll(async () => {
      shop = await openShop(h);
      other = await openShop(h);
      oud = await forSale(h, shop, 34_900, { name: 'Royal Oud Perfume 100 ml', quantity: 100 });
      musk = await forSale(h, shop, 2_550, { name: 'مسك الطهارة 12 مل', quantity: 100 });
      const abandon = async (name: keyof typeof carts, customerId: number, items: Array<{ productId: number; quantity: number }>) => {
        h.clock.advance(MINUTE);
        carts[name] = (await abandonCart(h.db, shop.actor(), { customerId, items })).id;
        abandonedAt[name] = h.clock.now();
      };
      await abandon('single', shop.customer.id, [{ productId: oud, quantity: 1 }]);
      await abandon('bulk', shop.other.id, [{ productId: musk, quantity: 4 }]);
      await abandon('recovered', shop.customer.id, [
        { productId: oud, quantity: 1 },
        { productId: musk, quantity: 2 },
      ]);
      // The cart's prices stay those the shopper saw, whatever the catalog says later.
      await h.db('products').where({ id: oud }).update({ price_halalas: 39_900 });
      h.clock.advance(HOUR);
      recoveredOrder = (await recoverCart(h.db, shop.actor(), carts.recovered)).id;
      recoveredAt = h.clock.now();
      const othersProduct = await forSale(h, other, 1_000);
      othersCart = (await abandonCart(h.db, other.actor(), { customerId: other.customer.id, items: [{ productId: othersProduct, quantity: 1 }] })).id;
      h.clock.advance(5 * MINUTE);
      tokens.reader = await tokenWithScopes(h, shop.store, ['carts:read']);
      tokens.contacts = await tokenWithScopes(h, shop.store, ['carts:read', 'customers:read']);
      tokens.orders = await tokenWithScopes(h, shop.store, ['orders:read', 'customers:read']);
      tokens.customersOnly = await tokenWithScopes(h, shop.store, ['customers:read']);
      tokens.ordersOnly = await tokenWithScopes(h, shop.store, ['orders:read', 'products:read']);
      tokens.otherStore = await tokenWithScopes(h, other.store, ['carts:read', 'customers:read']);
    });

    const minutesSince = (instant: number) => Math.floor((h.clock.now() - instant) / MINUTE);

    it('lists every cart of the store by ascending id, recovered ones included, and none of another store', async () => {
      const response = await get(cartsPath(shop), tokens.reader);
      expect(response.status).toBe(200);
      const body = response.body as ListBody;
      expect(body.data.map((cart) => cart.id)).toEqual([carts.single, carts.bulk, carts.recovered]);
      expect(body.meta).toEqual({ request_id: response.headers['x-request-id'], has_more: false, limit: 25, next_cursor: null, consistency: 'live_keyset' });
    });

    it('answers a cart with its lines at the prices seen, its subtotal, its total with 15 % VAT and no shipping, and its checkout link', async () => {
      const response = await get(cartsPath(shop, carts.single), tokens.reader);
      expect(response.status).toBe(200);
      expect(response.body.meta).toEqual({ request_id: response.headers['x-request-id'] });
      const cart = response.body.data as CartBody;
      expect(cart).toEqual({
        id: carts.single,
        customer: { id: shop.customer.id, name: 'Noura Al-Harbi' },
        items: [{ product_id: oud, name: 'Royal Oud Perfume 100 ml', quantity: 1, unit_price: '349.00', total: '349.00' }],
        subtotal: '349.00',
        total: '401.35',
        checkout_url: expect.stringMatching(/^https:\/\/store-[^/]+\.example\.com\/checkout\/recover\?t=[A-Za-z0-9_-]{16}$/),
        age_minutes: minutesSince(abandonedAt.single),
        recovered_order_id: null,
        created_at: toIso(abandonedAt.single),
        updated_at: toIso(abandonedAt.single),
      });
      const bulk = (await get(cartsPath(shop, carts.bulk), tokens.reader)).body.data as CartBody;
      expect(bulk).toMatchObject({
        items: [{ product_id: musk, name: 'مسك الطهارة 12 مل', quantity: 4, unit_price: '25.50', total: '102.00' }],
        subtotal: '102.00',
        total: '117.30',
      });
    });

    it('shows a recovered cart with the order placed from it, of the same customer', async () => {
      const cart = (await get(cartsPath(shop, carts.recovered), tokens.reader)).body.data as CartBody;
      expect(cart).toMatchObject({
        recovered_order_id: recoveredOrder,
        subtotal: '400.00',
        total: '460.00',
        items: [
          { product_id: oud, quantity: 1, unit_price: '349.00', total: '349.00' },
          { product_id: musk, quantity: 2, unit_price: '25.50', total: '51.00' },
        ],
        created_at: toIso(abandonedAt.recovered),
        updated_at: toIso(recoveredAt),
        age_minutes: minutesSince(recoveredAt),
      });
      const order = await get(`/stores/${shop.storeId}/v1/orders/${recoveredOrder}`, tokens.orders);
      expect(order.status).toBe(200);
      expect(order.body.data).toMatchObject({ id: recoveredOrder, customer: { id: shop.customer.id } });
    });

    it('answers each cart in the list as abandoned_carts.get answers it', async () => {
      for (const token of [tokens.reader, tokens.contacts]) {
        const listed = ((await get(cartsPath(shop), token)).body as ListBody).data;
        for (const cart of listed) expect((await get(cartsPath(shop, cart.id), token)).body.data).toEqual(cart);
      }
    });

    it('shows e-mail and mobile only with customers:read, and only those the shopper gave', async () => {
      const customersOf = async (token: string) => ((await get(cartsPath(shop), token)).body as ListBody).data.map((cart) => cart.customer);
      expect(await customersOf(tokens.reader)).toEqual([
        { id: shop.customer.id, name: 'Noura Al-Harbi' },
        { id: shop.other.id, name: 'Abdullah Al-Qahtani' },
        { id: shop.customer.id, name: 'Noura Al-Harbi' },
      ]);
      const noura = { id: shop.customer.id, name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' };
      expect(await customersOf(tokens.contacts)).toEqual([noura, { id: shop.other.id, name: 'Abdullah Al-Qahtani' }, noura]);
      expect((await get(cartsPath(shop, carts.single), tokens.contacts)).body.data.customer).toEqual(noura);
      expect((await get(cartsPath(shop, carts.single), tokens.reader)).body.data.customer).toEqual({ id: shop.customer.id, name: 'Noura Al-Harbi' });
    });

    it.each([1, 2])('walks the carts in pages of %i, each once, in id order', async (limit) => {
      expect(await walk(shop, tokens.reader, { limit })).toEqual({ ids: [carts.single, carts.bulk, carts.recovered], pages: Math.ceil(3 / limit) });
    });

    it("is 400 INVALID_CURSOR for another list's cursor, another store's, or one that is not a cursor", async () => {
      const first = (await get(cartsPath(shop), tokens.reader, { limit: 1 })).body as ListBody;
      const cursor = first.meta.next_cursor as string;
      expect(cursor).toEqual(expect.any(String));
      expectError(await get(cartsPath(other), tokens.otherStore, { limit: 1, cursor }), 400, 'INVALID_CURSOR');
      expectError(await get(`/stores/${shop.storeId}/v1/orders`, tokens.orders, { limit: 1, cursor }), 400, 'INVALID_CURSOR');
      expectError(await get(cartsPath(shop), tokens.reader, { cursor: `${cursor}x` }), 400, 'INVALID_CURSOR');
      expectError(await get(cartsPath(shop), tokens.reader, { cursor: 'not-a-cursor' }), 400, 'INVALID_CURSOR');
      // Its own list takes it, whatever the limit.
      expect(((await get(cartsPath(shop), tokens.reader, { limit: 5, cursor })).body as ListBody).data.map((cart) => cart.id)).toEqual([
        carts.bulk,
        carts.recovered,
      ]);
    });

    it.each<[string, Query]>([
      ['a limit of 0', { limit: 0 }],
      ['a limit over 100', { limit: 101 }],
      ['a limit that is not a number', { limit: 'ten' }],
    ])('is 400 VALIDATION_FAILED for %s', async (_why, query) => {
      expectError(await get(cartsPath(shop), tokens.reader, query), 400, 'VALIDATION_FAILED');
    });

    it('is 422 UNKNOWN_FIELD for a filter the list does not take, on the list and on one cart', async () => {
      expectError(await get(cartsPath(shop), tokens.reader, { recovered: 'true' }), 422, 'UNKNOWN_FIELD');
      expectError(await get(cartsPath(shop), tokens.reader, { customer_id: shop.customer.id }), 422, 'UNKNOWN_FIELD');
      expect((await get(cartsPath(shop, carts.single), tokens.reader, { status: 'open' })).status).toBe(422);
    });

    it("is 404 NOT_FOUND for another store's cart and for ids no cart has", async () => {
      for (const id of [othersCart, Math.max(carts.recovered, othersCart) + 1000, 2_147_483_647, HUGE_ID, '999999999999999']) {
        expectError(await get(cartsPath(shop, id), tokens.reader), 404, 'NOT_FOUND');
      }
      expect(((await get(cartsPath(shop), tokens.reader)).body as ListBody).data.map((cart) => cart.id)).not.toContain(othersCart);
    });

    it("is 404 STORE_NOT_FOUND for another store's token on this store's path", async () => {
      expectError(await get(cartsPath(shop), tokens.otherStore), 404, 'STORE_NOT_FOUND');
      expectError(await get(cartsPath(shop, carts.single), tokens.otherStore), 404, 'STORE_NOT_FOUND');
    });

    it.each(MALFORMED_IDS)('is 400 for the malformed id %s', async (id) => {
      expectError(await get(cartsPath(shop, id), tokens.reader), 400, 'VALIDATION_FAILED');
    });

    it.each<[string, keyof typeof tokens]>([
      ['customers:read alone', 'customersOnly'],
      ['orders:read and products:read', 'ordersOnly'],
    ])('is 403 INSUFFICIENT_SCOPE without carts:read (%s), naming it', async (_scopes, token) => {
      for (const response of [await get(cartsPath(shop), tokens[token]), await get(cartsPath(shop, carts.single), tokens[token])]) {
        expectError(response, 403, 'INSUFFICIENT_SCOPE');
        expect(response.headers['www-authenticate']).toContain('carts:read');
      }
    });

    // Last: it moves the clock past the other tests' tokens.
    it('counts age_minutes from the last change to the moment of the answer, by the clock', async () => {
      h.clock.advance(185 * MINUTE - 1);
      const token = await tokenWithScopes(h, shop.store, ['carts:read']);
      const ageOf = async (id: number) => ((await get(cartsPath(shop, id), token)).body.data as CartBody).age_minutes;
      const before = await ageOf(carts.single);
      expect(before).toBe(minutesSince(abandonedAt.single));
      h.clock.advance(1);
      expect(await ageOf(carts.single)).toBe(before + 1);
      h.clock.advance(MINUTE - 1);
      expect(await ageOf(carts.single)).toBe(before + 1);
      h.clock.advance(10 * MINUTE + 1);
      expect(await ageOf(carts.single)).toBe(before + 12);
      // The recovered cart last changed when it was ordered.
      expect(await ageOf(carts.recovered)).toBe(minutesSince(recoveredAt));
      const listed = ((await get(cartsPath(shop), token)).body as ListBody).data.map((cart) => cart.age_minutes);
      expect(listed).toEqual([minutesSince(abandonedAt.single), minutesSince(abandonedAt.bulk), minutesSince(recoveredAt)]);
    });
  });

  describe('more carts than a page', () => {
    let shop: Shop;
    let token = '';
    const ids: number[] = [];

    beforeAll(async () => {
      shop = await openShop(h);
      const oud = await forSale(h, shop, 1_000, { quantity: 1 });
      for (let index = 0; index < 30; index += 1) {
        h.clock.advance(1000);
        const customerId = index % 2 === 0 ? shop.customer.id : shop.other.id;
        ids.push((await abandonCart(h.db, shop.actor(), { customerId, items: [{ productId: oud, quantity: 1 + (index % 3) }] })).id);
      }
      token = await tokenWithScopes(h, shop.store, ['carts:read']);
    }, 60_000);

    it('walks every cart once, in id order, 25 to a page by default', async () => {
      expect(await walk(shop, token, {})).toEqual({ ids, pages: 2 });
    });

    it('walks them in small pages', async () => {
      expect(await walk(shop, token, { limit: 7 })).toEqual({ ids, pages: 5 });
      expect(await walk(shop, token, { limit: 100 })).toEqual({ ids, pages: 1 });
    });
  });
});
