import { toIso } from '../../../src/core/clock';
import { CURSOR_TTL_MS } from '../../../src/core/cursor';
import { expectError } from '../../support/auth-steps';
import {
  createProductVia,
  getProductCall,
  insertCategory,
  listProductsCall,
  openShop,
  patchProduct,
  productRows,
  type Shop,
  seedProducts,
  tokenWith,
  walkProducts,
} from '../../support/catalog-products';
import { testDatabases } from '../../support/databases';
import { type Harness, suiteHarness } from '../../support/harness';

const MINUTE = 60_000;

/** Ids of the store's rows matching `where`, ascending (what a walk must serve: no gap, no duplicate). */
const idsWhere = async (h: Harness, storeId: string, where: Record<string, unknown>) =>
  (await productRows(h.db, storeId).where(where)).map((row: { id: number }) => Number(row.id));

describe.each(testDatabases())('products.list on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 1000 } });

  beforeAll(async () => {
    // A walk with limit 1 makes a thousand requests within one rate-limit window of the manual clock.
  });

  describe('walking a thousand products', () => {
    let shop: Shop;

    beforeAll(async () => {
      shop = await openShop(h);
      // 2,000 rows, alternating, so the filter status=active matches 1,000 of them spread over the id range.
      await seedProducts(
        h,
        shop.storeId,
        Array.from({ length: 2000 }, (_, index) => ({ status: index % 2 === 0 ? 'active' : 'inactive' })),
      );
    });

    it.each([1, 25, 100])(
      'with limit %i and status=active serves each matching product once, in id order, while rows are inserted between pages',
      async (limit) => {
        const atStart = await idsWhere(h, shop.storeId, { status: 'active' });
        expect(atStart.length).toBeGreaterThanOrEqual(1000);
        let insertions = 0;
        const insertBetweenPages = async () => {
          if (insertions >= 10) return; // a bounded number, so the walk ends
          insertions += 1;
          await seedProducts(h, shop.storeId, [{ status: 'active', name: `Inserted ${limit}-${insertions}` }, { status: 'inactive' }]);
        };
        const walk = await walkProducts(h.app, shop.storeId, shop.tokens.full, { limit, status: 'active' }, insertBetweenPages);

        expect(new Set(walk.ids).size).toBe(walk.ids.length);
        expect(walk.ids).toEqual([...walk.ids].sort((a, b) => a - b));
        expect(walk.products.every((product) => product.status === 'active')).toBe(true);
        expect(walk.ids.slice(0, atStart.length)).toEqual(atStart);
        // Rows inserted meanwhile have higher ids than the walk's position: they come at the end.
        expect(walk.ids).toEqual(await idsWhere(h, shop.storeId, { status: 'active' }));
        expect(walk.pages).toBe(Math.ceil(walk.ids.length / limit));
      },
      120_000,
    );
  });

  describe('pages and filters', () => {
    let shop: Shop;
    let perfumes: number;
    let products: Record<'oud' | 'musk' | 'amber' | 'percent' | 'underscore' | 'arabic', number>;
    const start = Date.parse('2026-11-22T09:00:00Z');

    /** The ids one page answers for `query` (status 200 asserted). */
    const idsOf = async (query: Record<string, string | number>) => {
      const response = await listProductsCall(h.app, shop.storeId, shop.tokens.full, query);
      expect(response.status).toBe(200);
      return (response.body.data as { id: number }[]).map((product) => product.id);
    };

    beforeAll(async () => {
      h.clock.set(start);
      shop = await openShop(h, 'reader', 'priceReader', 'unrelated');
      perfumes = await insertCategory(h, shop.storeId, 'Perfumes');
      const [oud, musk, amber, percent, underscore, arabic] = await seedProducts(h, shop.storeId, [
        { name: 'Royal OUD Perfume', status: 'active', category_id: perfumes, updated_at: start },
        { name: 'White musk', status: 'inactive', category_id: perfumes, updated_at: start + MINUTE },
        { name: 'Amber oud oil', status: 'active', updated_at: start + 2 * MINUTE },
        { name: '100% oud', status: 'inactive', updated_at: start + 3 * MINUTE },
        { name: 'oud_wood', status: 'active', category_id: perfumes, updated_at: start + 4 * MINUTE },
        { name: 'عود ملكي', status: 'active', updated_at: start + 5 * MINUTE },
      ]);
      products = { oud, musk, amber, percent, underscore, arabic } as typeof products;
    });

    it('answers Products as products.get does, with keyset meta: default limit 25, has_more, next_cursor, live_keyset', async () => {
      const response = await listProductsCall(h.app, shop.storeId, shop.tokens.reader);
      expect(response.status).toBe(200);
      expect(response.body.meta).toEqual({
        request_id: response.headers['x-request-id'],
        has_more: false,
        limit: 25,
        next_cursor: null,
        consistency: 'live_keyset',
      });
      expect(response.body.data.map((product: { id: number }) => product.id)).toEqual(Object.values(products));
      const read = await getProductCall(h.app, shop.storeId, shop.tokens.full, products.oud);
      expect(response.body.data[0]).toEqual(read.body.data);
      expect(response.body.data[0]).toMatchObject({ category: 'Perfumes', updated_at: toIso(start) });

      const first = await listProductsCall(h.app, shop.storeId, shop.tokens.full, { limit: 4 });
      expect(first.body.meta).toMatchObject({ has_more: true, limit: 4, next_cursor: expect.any(String) });
      expect(first.body.data).toHaveLength(4);
      // The limit may change between pages; the filters may not.
      const next = await listProductsCall(h.app, shop.storeId, shop.tokens.full, { limit: 1, cursor: first.body.meta.next_cursor });
      expect(next.body.data.map((product: { id: number }) => product.id)).toEqual([products.underscore]);
    });

    it('filters by status', async () => {
      expect(await idsOf({ status: 'active' })).toEqual([products.oud, products.amber, products.underscore, products.arabic]);
      expect(await idsOf({ status: 'inactive' })).toEqual([products.musk, products.percent]);
    });

    it('filters by category name, case-insensitively; a name no category has matches nothing', async () => {
      expect(await idsOf({ category: 'Perfumes' })).toEqual([products.oud, products.musk, products.underscore]);
      expect(await idsOf({ category: 'PERFUMES' })).toEqual([products.oud, products.musk, products.underscore]);
      const none = await listProductsCall(h.app, shop.storeId, shop.tokens.full, { category: 'Incense' });
      expect(none.body.data).toEqual([]);
      expect(none.body.meta).toMatchObject({ has_more: false, next_cursor: null });
    });

    it("does not match another store's category of that name", async () => {
      const other = await openShop(h);
      await insertCategory(h, other.storeId, 'Incense');
      await seedProducts(h, other.storeId, [{ name: 'Bakhoor' }]);
      expect(await idsOf({ category: 'Incense' })).toEqual([]);
    });

    it('searches names case-insensitively for the text, % and _ taken literally', async () => {
      expect(await idsOf({ search: 'oud' })).toEqual([products.oud, products.amber, products.percent, products.underscore]);
      expect(await idsOf({ search: 'OUD PERF' })).toEqual([products.oud]);
      expect(await idsOf({ search: '%' })).toEqual([products.percent]);
      expect(await idsOf({ search: '_' })).toEqual([products.underscore]);
      expect(await idsOf({ search: 'عود' })).toEqual([products.arabic]);
      expect(await idsOf({ search: 'vanilla' })).toEqual([]);
    });

    it('filters by updated_since: products updated after the instant (the interface: "updated after it"), any offset', async () => {
      expect(await idsOf({ updated_since: toIso(start + 3 * MINUTE - 1) })).toEqual([products.percent, products.underscore, products.arabic]);
      expect(await idsOf({ updated_since: toIso(start + 3 * MINUTE) })).toEqual([products.underscore, products.arabic]);
      expect(await idsOf({ updated_since: '2026-11-22T12:03:59.999+03:00' })).toEqual([products.underscore, products.arabic]);
      expect(await idsOf({ updated_since: '2026-11-22T09:04:00Z' })).toEqual([products.arabic]);
      expect(await idsOf({ updated_since: '2026-11-23T00:00:00Z' })).toEqual([]);
    });

    it('combines filters with AND', async () => {
      expect(await idsOf({ status: 'active', category: 'perfumes', search: 'oud', updated_since: toIso(start + MINUTE) })).toEqual([products.underscore]);
    });

    it('a product changed through the API moves into updated_since and status filters', async () => {
      const other = await openShop(h);
      const { product, etag } = await createProductVia(h.app, other.storeId, other.tokens.full, { price: '5.00' });
      h.clock.advance(MINUTE);
      const since = toIso(h.clock.now());
      const list = (query: Record<string, string>) => listProductsCall(h.app, other.storeId, other.tokens.full, query);
      expect((await list({ updated_since: since })).body.data).toEqual([]);
      h.clock.advance(1);
      const activated = await patchProduct(h.app, other.storeId, other.tokens.full, product.id, 'content', { status: 'active' }, etag);
      expect((await list({ updated_since: since, status: 'active' })).body.data).toEqual([activated.body.data]);
    });

    it.each([
      ['a status that is not one', { status: 'archived' }],
      ['an empty status', { status: '' }],
      ['updated_since that is not a date-time', { updated_since: 'yesterday' }],
      ['updated_since without a time zone', { updated_since: '2026-11-22T09:00:00' }],
      ['updated_since with a month 13', { updated_since: '2026-13-01T00:00:00Z' }],
      ['a search over 100 characters', { search: 's'.repeat(101) }],
      ['an empty search', { search: '' }],
      ['a category name over 100 characters', { category: 'c'.repeat(101) }],
    ])('is 400 INVALID_FILTER for %s', async (_case, query) => {
      expectError(await listProductsCall(h.app, shop.storeId, shop.tokens.full, query), 400, 'INVALID_FILTER');
    });

    it.each([
      ['color', 'red'],
      ['sort', 'name'],
      ['offset', '10'],
      ['page', '2'],
      ['store_id', 'x'],
    ])('is 422 UNKNOWN_FIELD for the unknown filter %s', async (name, value) => {
      expectError(await listProductsCall(h.app, shop.storeId, shop.tokens.full, { [name]: value }), 422, 'UNKNOWN_FIELD');
    });

    it('is 400 VALIDATION_FAILED for a limit outside 1 to 100 or not an integer', async () => {
      for (const limit of ['0', '101', '-1', 'ten', '2.5']) {
        expectError(await listProductsCall(h.app, shop.storeId, shop.tokens.full, { limit }), 400, 'VALIDATION_FAILED');
      }
    });

    it('is 400 INVALID_CURSOR for a cursor from another filter set, from another store, or altered', async () => {
      const first = await listProductsCall(h.app, shop.storeId, shop.tokens.full, { limit: 1, status: 'active' });
      const cursor = first.body.meta.next_cursor as string;
      const otherFilters: Record<string, string>[] = [
        { status: 'inactive' },
        {},
        { status: 'active', search: 'oud' },
        { status: 'active', category: 'Perfumes' },
      ];
      for (const query of otherFilters) {
        expectError(await listProductsCall(h.app, shop.storeId, shop.tokens.full, { ...query, limit: 1, cursor }), 400, 'INVALID_CURSOR');
      }
      const other = await openShop(h);
      await seedProducts(h, other.storeId, [{ status: 'active' }, { status: 'active' }]);
      expectError(await listProductsCall(h.app, other.storeId, other.tokens.full, { limit: 1, status: 'active', cursor }), 400, 'INVALID_CURSOR');
      const altered = `${cursor.slice(0, 10)}${cursor[10] === 'A' ? 'B' : 'A'}${cursor.slice(11)}`;
      for (const bad of [altered, `${cursor}x`, 'not-a-cursor']) {
        expectError(await listProductsCall(h.app, shop.storeId, shop.tokens.full, { limit: 1, status: 'active', cursor: bad }), 400, 'INVALID_CURSOR');
      }
      const otherFirst = await listProductsCall(h.app, other.storeId, other.tokens.full, { limit: 1, status: 'active' });
      expectError(
        await listProductsCall(h.app, shop.storeId, shop.tokens.full, { limit: 1, status: 'active', cursor: otherFirst.body.meta.next_cursor }),
        400,
        'INVALID_CURSOR',
      );
    });

    it("lists the token's store only: another store's token on this store's path is 404 STORE_NOT_FOUND", async () => {
      const other = await openShop(h);
      await seedProducts(h, other.storeId, [{ name: 'Oud elsewhere' }]);
      expect(await idsOf({ search: 'elsewhere' })).toEqual([]);
      expectError(await listProductsCall(h.app, shop.storeId, other.tokens.full), 404, 'STORE_NOT_FOUND');
    });

    it('needs products:read (403 INSUFFICIENT_SCOPE otherwise)', async () => {
      for (const token of [shop.tokens.priceReader, shop.tokens.unrelated]) {
        const response = await listProductsCall(h.app, shop.storeId, token);
        expectError(response, 403, 'INSUFFICIENT_SCOPE');
        expect(response.headers['www-authenticate']).toContain('products:read');
      }
    });
  });

  // Last: the clock moves past the access tokens' 900 seconds.
  it('is 400 CURSOR_EXPIRED 15 minutes after the first page, for every later page', async () => {
    const shop = await openShop(h);
    await seedProducts(h, shop.storeId, [{}, {}, {}]);
    const page = (token: string, cursor: string) => listProductsCall(h.app, shop.storeId, token, { limit: 1, cursor });
    const first = await listProductsCall(h.app, shop.storeId, shop.tokens.full, { limit: 1 });
    h.clock.advance(CURSOR_TTL_MS - MINUTE);
    const second = await page(shop.tokens.full, first.body.meta.next_cursor);
    expect(second.status).toBe(200);
    h.clock.advance(MINUTE - 1);
    // A fresh token: the first one lived its 900 seconds.
    const token = await tokenWith(h, shop.store, ['products:read']);
    expect((await page(token, second.body.meta.next_cursor)).status).toBe(200);
    h.clock.advance(1);
    for (const cursor of [first.body.meta.next_cursor, second.body.meta.next_cursor]) {
      expectError(await page(token, cursor), 400, 'CURSOR_EXPIRED');
    }
  });
});
