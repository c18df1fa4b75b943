import request from 'supertest';
import { placeOrder } from '../../../src/domain/storefront/orders/changes';
import { expectedReports, type OrderBody, type ProductFacts } from '../../support/analytics-expected';
import { expectError } from '../../support/auth-steps';
import { tokenWithScopes } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { forSale, insertCoupon, openShop, type Shop } from '../../support/storefront-fixtures';

const REPORTS = [
  { operationId: 'analytics.overview', path: 'overview', scope: 'analytics.overview:read' },
  { operationId: 'analytics.sales', path: 'sales', scope: 'analytics.sales:read' },
  { operationId: 'analytics.products', path: 'sales-by-product', scope: 'analytics.products:read' },
  { operationId: 'analytics.categories', path: 'sales-by-category', scope: 'analytics.categories:read' },
] as const;

type Query = Array<[string, string]>;

interface ErrorDetailBody {
  location: string;
  field: string;
  message: string;
}

describe.each(testDatabases())('analytics requests on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });
  let shop: Shop;
  const narrow: Record<string, string> = {};
  const tokens = { analytics: '', orders: '', unrelated: '' };
  const products = new Map<number, ProductFacts>();

  beforeAll(async () => {
    h.clock.set('2026-11-20T09:00:00Z');
    shop = await openShop(h);
    // 105 products, five prices over and over, in one order with a 1.00 discount: equal lines get
    // equal shares but for the halalas left over, which go to the lower line ids first.
    const items: Array<{ productId: number; quantity: number }> = [];
    for (let index = 0; index < 105; index += 1) {
      const name = `Sample ${index}`;
      const productId = await forSale(h, shop, 1000 * ((index % 5) + 1), { name });
      products.set(productId, { name, category: null });
      items.push({ productId, quantity: 1 });
    }
    await insertCoupon(h.db, shop.storeId, 'ONE', { type: 'fixed', amount_halalas: 100 });
    await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items, couponCode: 'ONE' });
    h.clock.set('2026-11-22T09:00:00Z');
    for (const { scope } of REPORTS) narrow[scope] = await tokenWithScopes(h, shop.store, [scope]);
    tokens.analytics = await tokenWithScopes(h, shop.store, ['analytics:read']);
    tokens.orders = await tokenWithScopes(h, shop.store, ['orders:read']);
    tokens.unrelated = await tokenWithScopes(h, shop.store, ['orders:read', 'products:read', 'customers:read']);
  });

  const get = (path: string, token: string, query: Query) => {
    const search = query.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');
    return request(h.app)
      .get(`/stores/${shop.storeId}/v1/analytics/${path}${search ? `?${search}` : ''}`)
      .set('Authorization', `Bearer ${token}`);
  };
  const range = (from: string, to: string): Query => [
    ['from', from],
    ['to', to],
  ];
  const NOVEMBER = range('2026-11-01', '2026-11-30');

  describe('sales by product', () => {
    it('lists at most 100 products, by net sales descending, ties by product id', async () => {
      const response = await get('sales-by-product', tokens.analytics, NOVEMBER);
      expect(response.status).toBe(200);
      const listed = response.body.data as Array<{ product_id: number; net_sales: string }>;
      expect(listed).toHaveLength(100);
      const orders = (await request(h.app).get(`/stores/${shop.storeId}/v1/orders`).set('Authorization', `Bearer ${tokens.orders}`)).body.data as OrderBody[];
      expect(listed).toEqual(expectedReports(orders, '2026-11-01', '2026-11-30', products).products);
      // The ties the rule settles: equal lines whose shares differ by the leftover halala, and equal nets cut at 100.
      const netOf = (productId: number) => listed.find((line) => line.product_id === productId)?.net_sales;
      const ids = [...products.keys()].sort((a, b) => a - b);
      const fiftyRiyals = ids.filter((_, index) => index % 5 === 4);
      expect(fiftyRiyals.map(netOf)).toEqual([...Array(16).fill('49.98'), ...Array(5).fill('49.99')]);
      const tenRiyals = ids.filter((_, index) => index % 5 === 0);
      expect(tenRiyals.map(netOf)).toEqual([...Array(16).fill('10.00'), ...Array(5).fill(undefined)]);
    });

    it('counts one order once in its category, whatever its lines', async () => {
      const response = await get('sales-by-category', tokens.analytics, NOVEMBER);
      expect(response.body.data).toEqual([{ category_id: null, category: null, items_sold: 105, orders_count: 1, net_sales: '3149.00' }]);
    });
  });

  describe.each(REPORTS)('$operationId', ({ path, scope }) => {
    it(`answers with analytics:read and with ${scope}`, async () => {
      expect((await get(path, tokens.analytics, NOVEMBER)).status).toBe(200);
      expect((await get(path, narrow[scope] as string, NOVEMBER)).status).toBe(200);
    });

    it("is 403 INSUFFICIENT_SCOPE with another report's scope or with unrelated scopes", async () => {
      for (const { scope: otherScope } of REPORTS.filter((report) => report.scope !== scope)) {
        const response = await get(path, narrow[otherScope] as string, NOVEMBER);
        expectError(response, 403, 'INSUFFICIENT_SCOPE');
      }
      expectError(await get(path, tokens.unrelated, NOVEMBER), 403, 'INSUFFICIENT_SCOPE');
    });

    it('takes a range of 367 days (from 366 days before to, over a leap day or not) and of one day', async () => {
      expect((await get(path, tokens.analytics, range('2024-02-28', '2025-02-28'))).status).toBe(200);
      expect((await get(path, tokens.analytics, range('2025-11-21', '2026-11-22'))).status).toBe(200);
      expect((await get(path, tokens.analytics, range('2026-11-22', '2026-11-22'))).status).toBe(200);
    });

    it.each<[string, Query, string]>([
      ['from after to', range('2026-11-02', '2026-11-01'), 'from'],
      ['a range of 368 days', range('2025-11-20', '2026-11-22'), 'from'],
      ['a range of 368 days over a leap day', range('2024-02-27', '2025-02-28'), 'from'],
      ['a from that does not exist', range('2026-02-30', '2026-03-31'), 'from'],
      ['a to that does not exist', range('2026-02-01', '2026-02-30'), 'to'],
      ['a 29 February outside a leap year', range('2025-02-01', '2025-02-29'), 'to'],
      ['a thirteenth month', range('2026-13-01', '2026-12-31'), 'from'],
      ['a day zero', range('2026-11-00', '2026-11-22'), 'from'],
      ['a from that is no date', range('yesterday', '2026-11-22'), 'from'],
      ['a to with a time', range('2026-11-01', '2026-11-22T00:00:00Z'), 'to'],
      ['a date without its zeros', range('2026-11-1', '2026-11-22'), 'from'],
      ['an empty to', range('2026-11-01', ''), 'to'],
      ['no from', [['to', '2026-11-22']], 'from'],
      ['no to', [['from', '2026-11-01']], 'to'],
      ['a repeated from', [...NOVEMBER, ['from', '2026-11-02']], 'from'],
    ])('is 400 VALIDATION_FAILED naming the parameter for %s', async (_why, query, field) => {
      const response = await get(path, tokens.analytics, query);
      expectError(response, 400, 'VALIDATION_FAILED');
      const details = response.body.error.details as ErrorDetailBody[];
      expect(details).toContainEqual(expect.objectContaining({ location: 'query', field }));
    });

    it('says what is wrong with the range, on the parameter', async () => {
      const backwards = await get(path, tokens.analytics, range('2026-11-02', '2026-11-01'));
      expect(backwards.body.error.details).toEqual([{ location: 'query', field: 'from', message: 'must not be after `to` (2026-11-01)' }]);
      const tooLong = await get(path, tokens.analytics, range('2025-11-20', '2026-11-22'));
      expect(tooLong.body.error.details).toEqual([{ location: 'query', field: 'from', message: 'must be at most 366 days before `to` (2026-11-22)' }]);
      const unreal = await get(path, tokens.analytics, range('2026-02-30', '2026-02-31'));
      expect(unreal.body.error.details).toEqual([
        { location: 'query', field: 'from', message: 'must be a calendar day that exists (YYYY-MM-DD)' },
        { location: 'query', field: 'to', message: 'must be a calendar day that exists (YYYY-MM-DD)' },
      ]);
    });

    it('is 422 UNKNOWN_FIELD for a parameter the report does not take', async () => {
      expectError(await get(path, tokens.analytics, [...NOVEMBER, ['store_id', shop.storeId]]), 422, 'UNKNOWN_FIELD');
    });
  });
});
