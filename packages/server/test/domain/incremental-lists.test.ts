/**
 * `updated_since` on every keyset list whose records change, held against the words of the spec's
 * `UpdatedSince` parameter (one table of lists, the same tests for each): records changed strictly
 * after the instant, and only those; the walk by `updated_at`, then id, so that a record changed
 * between two pages is served again later in the same walk and none is skipped, while a walk with
 * no changes serves each once; the cursor bound to the filter; bad dates; each list's other
 * filters combined with it; the sync loop of docs/guides/04-paging.md. Records are made and changed
 * through the domain's own writers, as the store's side changes them.
 */

import request from 'supertest';
import { toIso } from '../../src/core/clock';
import { createCategory, updateCategory } from '../../src/domain/catalog/categories/changes';
import { adjustInventory } from '../../src/domain/catalog/inventory/changes';
import { createProduct, updateProductPrices } from '../../src/domain/catalog/products/changes';
import { anyVersion } from '../../src/domain/common/actor';
import { createPage, setPagePublication } from '../../src/domain/content/pages/changes';
import { abandonCart, recoverCart } from '../../src/domain/storefront/carts/changes';
import { createCoupon, setCouponStatus } from '../../src/domain/storefront/coupons/changes';
import { payOrder, placeOrder, refundOrder } from '../../src/domain/storefront/orders/changes';
import { moderateReview, writeReview } from '../../src/domain/storefront/reviews/changes';
import { expectError } from '../support/auth-steps';
import { testDatabases } from '../support/databases';
import { fullAccess, type Harness, suiteHarness } from '../support/harness';
import { walkList, withCursor } from '../support/list-walk';
import { deliveredOrder, forSale, openShop, type Shop } from '../support/storefront-fixtures';

const SECOND = 1000;

type Query = Record<string, string | number>;

/** A list item as the tests read it: its id (`product_id` for inventory items) and when it last changed. */
type Item = { id?: number; product_id?: number; updated_at: string } & Record<string, unknown>;

/** One store with what its list needs (a product for sale, for orders and what comes of them). */
interface World {
  h: Harness;
  shop: Shop;
  productId: number;
}

interface SyncedList {
  /** The operation, as the spec names it. */
  list: string;
  /** Below `/stores/{storeId}/v1/`. */
  path: string;
  /** The id an item answers (`product_id` for inventory). */
  idOf?: (item: Item) => number;
  /** Makes the `n`th record of the test at the clock's instant; its id. */
  make(w: World, n: number): Promise<number>;
  /** Changes the record, through the writer the store uses, in a way its answer shows. */
  change(w: World, id: number): Promise<void>;
  /** Another filter of the list, and what an item it keeps looks like (`make` varies it with `n`). */
  other?: { query: Query; keeps: (item: Item) => boolean };
}

const MADA = { method: 'mada' as const, card: { brand: 'mada' as const, last4: '4821' } };
let counter = 0;
const next = () => {
  counter += 1;
  return counter;
};

const hasOud = (item: Item) => String(item.name).toLowerCase().includes('oud');

const LISTS: SyncedList[] = [
  {
    list: 'products.list',
    path: 'products',
    make: async ({ h, shop }, n) =>
      (await createProduct(h.db, shop.actor(), { name: `${n % 2 === 0 ? 'Oud' : 'Musk'} ${next()}`, product_kind: 'physical', price: '10.00' })).id,
    change: async ({ h, shop }, id) => void (await updateProductPrices(h.db, shop.actor(), id, anyVersion, { price: '12.50' })),
    other: { query: { search: 'oud' }, keeps: hasOud },
  },
  {
    list: 'orders.list',
    path: 'orders',
    make: async ({ h, shop, productId }) => (await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId, quantity: 1 }] })).id,
    change: async ({ h, shop }, id) => void (await payOrder(h.db, shop.actor(), id, MADA)),
    other: { query: { payment_status: 'paid' }, keeps: (item) => item.payment_status === 'paid' },
  },
  {
    list: 'payments.list',
    path: 'payments',
    make: async ({ h, shop, productId }, n) => {
      const order = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId, quantity: 1 }] });
      await payOrder(h.db, shop.actor(), order.id, n % 2 === 0 ? MADA : { method: 'cod' });
      const payment = await h.db('payments').where({ store_id: shop.storeId, order_id: order.id }).first('id');
      return Number(payment.id);
    },
    change: async ({ h, shop }, id) => {
      const payment = await h.db('payments').where({ store_id: shop.storeId, id }).first('order_id');
      await refundOrder(h.db, shop.actor(), Number(payment.order_id));
    },
    other: { query: { method: 'mada' }, keeps: (item) => item.method === 'mada' },
  },
  {
    list: 'abandoned_carts.list',
    path: 'abandoned-carts',
    make: async ({ h, shop, productId }) => (await abandonCart(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId, quantity: 1 }] })).id,
    change: async ({ h, shop }, id) => void (await recoverCart(h.db, shop.actor(), id)),
  },
  {
    list: 'coupons.list',
    path: 'coupons',
    make: async ({ h, shop }, n) =>
      (await createCoupon(h.db, shop.actor(), { code: `SYNC-${next()}`, type: 'fixed', amountHalalas: 500, status: n % 2 === 0 ? 'active' : 'inactive' })).id,
    change: async ({ h, shop }, id) => {
      const coupon = await h.db('coupons').where({ store_id: shop.storeId, id }).first('status');
      await setCouponStatus(h.db, shop.actor(), id, coupon.status === 'active' ? 'inactive' : 'active');
    },
    other: { query: { status: 'active' }, keeps: (item) => item.status === 'active' },
  },
  {
    list: 'reviews.list',
    path: 'reviews',
    make: async (w) => {
      const order = await deliveredOrder(w.h, w.shop, [w.productId]);
      const review = { customerId: w.shop.customer.id, orderId: order.id, productId: w.productId, rating: 4, content: 'Lasts all day.' };
      return (await writeReview(w.h.db, w.shop.actor(), review)).id;
    },
    change: async ({ h, shop }, id) => void (await moderateReview(h.db, shop.actor(), id, 'published')),
    other: { query: { status: 'published' }, keeps: (item) => item.status === 'published' },
  },
  {
    list: 'pages.list',
    path: 'pages',
    make: async ({ h, shop }) => (await createPage(h.db, shop.actor(), { title: `Returns policy ${next()}` })).id,
    change: async ({ h, shop }, id) => void (await setPagePublication(h.db, shop.actor(), id, anyVersion, 'published')),
    other: { query: { status: 'published' }, keeps: (item) => item.status === 'published' },
  },
  {
    list: 'categories.list',
    path: 'categories',
    make: async ({ h, shop }, n) => (await createCategory(h.db, shop.actor(), { name: `${n % 2 === 0 ? 'Oud' : 'Musk'} ${next()}` })).id,
    change: async ({ h, shop }, id) => void (await updateCategory(h.db, shop.actor(), id, anyVersion, { description: `Changed ${next()}` })),
    other: { query: { search: 'oud' }, keeps: hasOud },
  },
  {
    list: 'inventory.list',
    path: 'inventory',
    idOf: (item) => item.product_id as number,
    make: async ({ h, shop }) => (await createProduct(h.db, shop.actor(), { name: `Stock ${next()}`, product_kind: 'physical' })).id,
    change: async ({ h, shop }, id) => void (await adjustInventory(h.db, shop.actor(), id, { delta: 3, reason: 'restock' })),
  },
];

describe.each(testDatabases())('incremental lists (updated_since) on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });

  describe.each(LISTS)('$list', (synced) => {
    const idOf = synced.idOf ?? ((item: Item) => item.id as number);
    let w: World;
    let other: World;
    let token: string;

    const openWorld = async (): Promise<World> => {
      const shop = await openShop(h);
      return { h, shop, productId: await forSale(h, shop, 10_000, { quantity: 100_000 }) };
    };

    beforeAll(async () => {
      w = await openWorld();
      other = await openWorld();
    });
    // A fresh token for each test: the clock moves on, and a token lives 15 minutes.
    beforeEach(async () => {
      h.clock.advance(SECOND);
      token = (await fullAccess(h, w.shop.store)).tokens.access_token;
    });

    const call = (query: Query, as = token, world = w) =>
      request(h.app).get(`/stores/${world.shop.storeId}/v1/${synced.path}`).query(query).set('Authorization', `Bearer ${as}`);

    /** Every item of a walk for `query`, following the cursors; `between(page)` runs after each page that has a next one. */
    async function walk(query: Query, options: { limit?: number; between?: (page: number) => Promise<void> } = {}): Promise<Item[]> {
      const limited = { ...query, ...(options.limit ? { limit: options.limit } : {}) };
      return (await walkList<Item>((cursor) => call(withCursor(limited, cursor)), options.between)).items;
    }

    /** `make` `count` records, each a second after the one before; their ids. */
    async function makeSeveral(count: number, world = w): Promise<number[]> {
      const ids: number[] = [];
      for (let n = 0; n < count; n += 1) {
        h.clock.advance(SECOND);
        ids.push(await synced.make(world, n));
      }
      return ids;
    }

    /** The walk's order: by `updated_at`, then id. */
    const keyOf = (item: Item): [number, number] => [Date.parse(item.updated_at), idOf(item)];
    const inWalkOrder = (items: readonly Item[]) =>
      items.every((item, index) => {
        const before = items[index - 1];
        if (before === undefined) return true;
        const [[t0, id0], [t1, id1]] = [keyOf(before), keyOf(item)];
        return t0 < t1 || (t0 === t1 && id0 < id1);
      });

    it('serves the records updated strictly after the instant, in any offset, and only those', async () => {
      const start = h.clock.now();
      const [first, second, third] = (await makeSeveral(3)) as [number, number, number];
      await makeSeveral(1, other);
      const all = await walk({ updated_since: toIso(start) });
      expect(all.map(idOf)).toEqual([first, second, third]);
      const secondAt = Date.parse((all[1] as Item).updated_at);
      expect(secondAt).toBeGreaterThan(start);

      expect((await walk({ updated_since: toIso(secondAt - 1) })).map(idOf)).toEqual([second, third]);
      // The instant itself is not after it.
      expect((await walk({ updated_since: toIso(secondAt) })).map(idOf)).toEqual([third]);
      // The same instant written in Riyadh's offset.
      const inRiyadh = toIso(secondAt + 3 * 3600 * SECOND).replace('Z', '+03:00');
      expect((await walk({ updated_since: inRiyadh })).map(idOf)).toEqual([third]);
      expect(await walk({ updated_since: toIso(h.clock.now()) })).toEqual([]);
    });

    it('serves only what changed since the largest updated_at of the last walk: the sync loop', async () => {
      const start = h.clock.now();
      const ids = await makeSeveral(4);
      // The first sync: the whole list from the start of time, by update time; the mark is the largest updated_at seen.
      const full = await walk({ updated_since: '1970-01-01T00:00:00Z' }, { limit: 3 });
      expect(full.map(idOf).sort((x, y) => x - y)).toEqual((await walk({})).map(idOf));
      expect(full.map(idOf).slice(-4)).toEqual(ids);
      const markOf = (items: readonly Item[], before: number) => Math.max(before, ...items.map((item) => Date.parse(item.updated_at)));
      let mark = markOf(full, start);
      expect(await walk({ updated_since: toIso(mark) })).toEqual([]);

      h.clock.advance(SECOND);
      await synced.change(w, ids[2] as number);
      h.clock.advance(SECOND);
      await synced.change(w, ids[0] as number);
      const changed = await walk({ updated_since: toIso(mark) }, { limit: 1 });
      expect(changed.map(idOf)).toEqual([ids[2], ids[0]]);
      // Served as the list answers them now.
      const now = await walk({});
      for (const item of changed) expect(item).toEqual(now.find((current) => idOf(current) === idOf(item)));
      mark = markOf(changed, mark);
      expect(mark).toBe(h.clock.now());
      expect(await walk({ updated_since: toIso(mark) })).toEqual([]);
    });

    it.each([1, 2, 3])('serves each record once, by updated_at then id, ties included, in a walk with no changes (limit %i)', async (limit) => {
      const start = h.clock.now();
      // Two records of one instant, one alone, two more of one instant.
      h.clock.advance(SECOND);
      const tied = [await synced.make(w, 0), await synced.make(w, 1)];
      h.clock.advance(SECOND);
      const alone = await synced.make(w, 2);
      h.clock.advance(SECOND);
      const lastTied = [await synced.make(w, 3), await synced.make(w, 4)];
      const items = await walk({ updated_since: toIso(start) }, { limit });
      expect(items.map(idOf)).toEqual([...tied, alone, ...lastTied]);
      expect(inWalkOrder(items)).toBe(true);
    });

    it('serves a record changed between two pages again later in the same walk, and skips none', async () => {
      const start = h.clock.now();
      const [a, b, c, d, e] = (await makeSeveral(5)) as [number, number, number, number, number];
      const items = await walk(
        { updated_since: toIso(start) },
        {
          limit: 2,
          between: async (page) => {
            if (page !== 1) return;
            // `a` was served on the first page, `d` is still ahead: both move behind the cursor.
            h.clock.advance(SECOND);
            await synced.change(w, a);
            await synced.change(w, d);
          },
        },
      );
      expect(items.map(idOf)).toEqual([a, b, c, e, a, d]);
      expect(inWalkOrder(items)).toBe(true);
      // The later serving carries the change.
      expect(Date.parse((items[4] as Item).updated_at)).toBe(h.clock.now());
      expect(items[4]).not.toEqual(items[0]);
    });

    it('binds the cursor to the filter: another instant, none, or a cursor of the walk by id is INVALID_CURSOR', async () => {
      const start = h.clock.now();
      await makeSeveral(3);
      const since = toIso(start);
      const first = await call({ updated_since: since, limit: 1 });
      const cursor = first.body.meta.next_cursor as string;
      expect(typeof cursor).toBe('string');
      expect((await call({ updated_since: since, limit: 1, cursor })).status).toBe(200);
      expectError(await call({ updated_since: toIso(start - 1), limit: 1, cursor }), 400, 'INVALID_CURSOR');
      expectError(await call({ limit: 1, cursor }), 400, 'INVALID_CURSOR');
      const byId = (await call({ limit: 1 })).body.meta.next_cursor as string;
      expectError(await call({ updated_since: since, limit: 1, cursor: byId }), 400, 'INVALID_CURSOR');
      // Another store's cursor of the same filter; and another store's token on this store's path.
      await makeSeveral(2, other);
      const otherToken = (await fullAccess(h, other.shop.store)).tokens.access_token;
      const theirs = (await call({ updated_since: since, limit: 1 }, otherToken, other)).body.meta.next_cursor as string;
      expectError(await call({ updated_since: since, limit: 1, cursor: theirs }), 400, 'INVALID_CURSOR');
      expectError(await call({ updated_since: since }, otherToken), 404, 'STORE_NOT_FOUND');
    });

    it.each([
      ['not a date-time', 'yesterday'],
      ['a date without a time', '2026-11-22'],
      ['without an offset', '2026-11-22T09:00:00'],
      ['a month 13', '2026-13-01T00:00:00Z'],
      ['a day that does not exist', '2026-02-30T00:00:00Z'],
      ['the hour 24', '2026-11-22T24:00:00Z'],
      ['over 64 characters', `2026-11-22T09:00:00.${'0'.repeat(50)}Z`],
      ['empty', ''],
    ])('is 400 INVALID_FILTER for updated_since %s', async (_case, value) => {
      expectError(await call({ updated_since: value }), 400, 'INVALID_FILTER');
    });

    it('is 400 VALIDATION_FAILED for updated_since given twice', async () => {
      const response = await request(h.app)
        .get(`/stores/${w.shop.storeId}/v1/${synced.path}?updated_since=2026-11-01T00:00:00Z&updated_since=2026-11-02T00:00:00Z`)
        .set('Authorization', `Bearer ${token}`);
      expectError(response, 400, 'VALIDATION_FAILED');
    });

    // Abandoned carts and inventory take no other filter.
    const combined = synced.other;
    if (combined) {
      it('combines with the list’s other filters (AND), in the walk’s order', async () => {
        const start = h.clock.now();
        const ids = await makeSeveral(4);
        h.clock.advance(SECOND);
        await synced.change(w, ids[0] as number);
        h.clock.advance(SECOND);
        await synced.change(w, ids[1] as number);
        const since = { updated_since: toIso(start) };
        const every = await walk(since);
        const kept = every.filter(combined.keeps);
        expect(kept.length).toBeGreaterThan(0);
        expect(kept.length).toBeLessThan(every.length);
        expect(await walk({ ...since, ...combined.query }, { limit: 1 })).toEqual(kept);
      });
    }
  });
});
