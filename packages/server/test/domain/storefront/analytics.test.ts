import request from 'supertest';
import { toIso } from '../../../src/core/clock';
import { createCategory } from '../../../src/domain/catalog/categories/changes';
import { updateProductContent } from '../../../src/domain/catalog/products/changes';
import { anyVersion } from '../../../src/domain/common/actor';
import { createCustomer } from '../../../src/domain/storefront/customers/changes';
import { cancelOrder, payOrder, placeOrder, refundOrder } from '../../../src/domain/storefront/orders/changes';
import {
  daysBetween,
  type ExpectedReports,
  expectedReports,
  halalasOf,
  type OrderBody,
  type ProductFacts,
  riyadhDayOf,
  vatOf,
} from '../../support/analytics-expected';
import { insertDigitalUnits, tokenWithScopes } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { walkList, withCursor } from '../../support/list-walk';
import { forSale, insertCoupon, openShop, type Shop } from '../../support/storefront-fixtures';

const MADA = { method: 'mada' as const, card: { brand: 'mada' as const, last4: '4821' } };
const SECOND = 1000;

/** Placing some 130 orders one transaction at a time takes seconds, more on a busy machine. */
const SETUP_MS = 180_000;

/** When the reports are asked for: the harness clock's own start, after every order. */
const NOW = Date.parse('2026-11-22T09:00:00Z');

/** The 90-day range (Riyadh days), and the days around it that hold orders on its edges. */
const RANGE = { from: '2026-08-23', to: '2026-11-20' };
/** A day of four orders written out by hand below. */
const HAND_DAY = '2026-10-15';
/** A week inside the range with no orders. */
const QUIET_WEEK = daysBetween('2026-09-20', '2026-09-26');
/** The last second before and the first instant of a Riyadh day (21:00 UTC). */
const EDGES = {
  beforeFrom: Date.parse('2026-08-22T20:59:59Z'),
  atFrom: Date.parse('2026-08-22T21:00:00Z'),
  beforeTo: Date.parse('2026-11-20T20:59:59Z'),
  afterTo: Date.parse('2026-11-20T21:00:00Z'),
};

/** A small repeatable generator (mulberry32), so the orders are the same on every run. */
function seeded(seed: number) {
  let state = seed;
  return (below: number) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below);
  };
}

type Fate = 'pending' | 'paid' | 'refunded' | 'cancelled' | 'paid-then-cancelled';

interface PlannedOrder {
  at: number;
  customerId: number;
  items: Array<{ productId: number; quantity: number }>;
  couponCode?: string;
  fate: Fate;
}

type Report = 'overview' | 'sales' | 'sales-by-product' | 'sales-by-category';
const REPORTS: Report[] = ['overview', 'sales', 'sales-by-product', 'sales-by-category'];

describe.each(testDatabases())('analytics over the daily rollups on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });
  let shop: Shop;
  let other: Shop;
  const tokens = { analytics: '', orders: '', otherAnalytics: '', otherOrders: '' };
  const products = new Map<number, ProductFacts>();
  const otherProducts = new Map<number, ProductFacts>();
  const hand = { perfume: 0, oudChips: 0, massage: 0, giftCard: 0, amber: 0 };
  const handOrders: Record<string, number> = {};
  const edgeOrders: Record<keyof typeof EDGES, number> = { beforeFrom: 0, atFrom: 0, beforeTo: 0, afterTo: 0 };

  async function place(target: Shop, planned: PlannedOrder): Promise<number> {
    h.clock.set(planned.at);
    const { id } = await placeOrder(h.db, target.actor(), { customerId: planned.customerId, items: planned.items, couponCode: planned.couponCode ?? null });
    h.clock.advance(SECOND);
    if (planned.fate !== 'pending' && planned.fate !== 'cancelled') await payOrder(h.db, target.actor(), id, MADA);
    if (planned.fate === 'refunded') await refundOrder(h.db, target.actor(), id);
    if (planned.fate === 'cancelled' || planned.fate === 'paid-then-cancelled') await cancelOrder(h.db, target.actor(), id);
    return id;
  }

  beforeAll(async () => {
    // Everything is placed in time order, from before the range on, so the clock only moves forward.
    h.clock.set('2026-08-01T09:00:00Z');
    shop = await openShop(h);
    other = await openShop(h);
    const perfumes = await createCategory(h.db, shop.actor(), { name: 'Perfumes' });
    const oud = await createCategory(h.db, shop.actor(), { name: 'Oud' });
    await createCategory(h.db, shop.actor(), { name: 'Gifts' }); // never sold: never listed
    const customers = [shop.customer.id, shop.other.id];
    for (const name of ['Sara', 'Fahad', 'Reem', 'Khalid']) customers.push((await createCustomer(h.db, shop.actor(), { name })).id);

    const product = async (
      name: string,
      price: number,
      category: { id: number; name: string } | null,
      kind: 'physical' | 'service' | 'digital' = 'physical',
    ) => {
      const id = await forSale(h, shop, price, { name, category_id: category?.id ?? null, quantity: kind === 'digital' ? 0 : 100_000, product_kind: kind });
      products.set(id, { name, category: category && { id: category.id, name: category.name } });
      return id;
    };
    hand.perfume = await product('Royal Oud Perfume 100 ml', 34_900, perfumes);
    hand.oudChips = await product('Cambodian Oud Chips', 12_000, oud);
    hand.massage = await product('Oud Massage', 5_000, null, 'service');
    hand.giftCard = await product('Gift card', 10_000, perfumes, 'digital');
    await insertDigitalUnits(
      h.db,
      shop.storeId,
      hand.giftCard,
      Array.from({ length: 400 }, (_, index) => `GC-${index}`),
    );
    // Only ever in a cancelled order: never listed.
    hand.amber = await product('Amber Resin', 4_500, oud);
    const more = [
      await product('Taif Rose 50 ml', 27_350, perfumes),
      await product('Musk Tahara 12 ml', 2_550, perfumes),
      await product('Incense Burner', 8_999, null),
      await product('Oud Oil 3 ml', 19_999, oud),
    ];
    const pool = [hand.perfume, hand.oudChips, hand.massage, hand.giftCard, ...more];
    await insertCoupon(h.db, shop.storeId, 'TEN', { type: 'percentage', amount_halalas: 1000 });
    await insertCoupon(h.db, shop.storeId, 'ODD', { type: 'percentage', amount_halalas: 733 });
    await insertCoupon(h.db, shop.storeId, 'FIXED25', { type: 'fixed', amount_halalas: 2500 });
    await insertCoupon(h.db, shop.storeId, 'SHIPFREE', { type: 'percentage', amount_halalas: 0, free_shipping: true });
    const coupons = [undefined, undefined, 'TEN', 'ODD', 'FIXED25', 'SHIPFREE'];
    const fates: Fate[] = ['pending', 'paid', 'paid', 'paid', 'refunded', 'cancelled', 'paid-then-cancelled'];

    const random = seeded(20261015);
    const plan: Array<PlannedOrder & { label?: string; store?: Shop }> = [];
    const busyDays = daysBetween('2026-08-23', '2026-11-19').filter((day) => day !== HAND_DAY && !QUIET_WEEK.includes(day));
    for (let index = 0; index < 120; index += 1) {
      const day = busyDays[random(busyDays.length)] as string;
      const lineCount = 1 + random(4);
      const chosen = new Set<number>();
      while (chosen.size < lineCount) chosen.add(pool[random(pool.length)] as number);
      plan.push({
        at: Date.parse(`${day}T00:00:00+03:00`) + random(86_400) * SECOND,
        customerId: customers[random(customers.length)] as number,
        items: [...chosen].map((productId) => ({ productId, quantity: 1 + random(3) })),
        couponCode: coupons[random(coupons.length)],
        fate: fates[random(fates.length)] as Fate,
      });
    }
    // The hand-written day (see its test): a refunded order with a coupon, a paid digital one, a cancelled one, a pending service.
    const handAt = (time: string) => Date.parse(`${HAND_DAY}T${time}+03:00`);
    const [noura, abdullah] = customers as [number, number];
    plan.push(
      {
        label: 'refunded',
        at: handAt('10:00:00'),
        customerId: noura,
        items: [
          { productId: hand.perfume, quantity: 1 },
          { productId: hand.oudChips, quantity: 2 },
        ],
        couponCode: 'TEN',
        fate: 'refunded',
      },
      { label: 'digital', at: handAt('12:00:00'), customerId: abdullah, items: [{ productId: hand.giftCard, quantity: 1 }], fate: 'paid' },
      {
        label: 'cancelled',
        at: handAt('15:00:00'),
        customerId: noura,
        items: [
          { productId: hand.perfume, quantity: 2 },
          { productId: hand.amber, quantity: 1 },
        ],
        fate: 'cancelled',
      },
      { label: 'service', at: handAt('23:00:00'), customerId: noura, items: [{ productId: hand.massage, quantity: 3 }], fate: 'pending' },
    );
    for (const [edge, at] of Object.entries(EDGES)) {
      plan.push({ label: edge, at, customerId: noura, items: [{ productId: hand.oudChips, quantity: 1 }], fate: 'paid' });
    }

    // The other store sells on the same days, the hand-written one too.
    const otherCategory = await createCategory(h.db, other.actor(), { name: 'Perfumes' });
    const otherProduct = await forSale(h, other, 50_000, { name: 'Other Perfume', category_id: otherCategory.id, quantity: 1000 });
    otherProducts.set(otherProduct, { name: 'Other Perfume', category: otherCategory });
    for (const day of [HAND_DAY, '2026-09-01', '2026-11-01']) {
      plan.push({
        store: other,
        at: Date.parse(`${day}T11:00:00+03:00`),
        customerId: other.customer.id,
        items: [{ productId: otherProduct, quantity: 2 }],
        fate: 'paid',
      });
    }

    for (const planned of plan.sort((a, b) => a.at - b.at)) {
      const id = await place(planned.store ?? shop, planned);
      if (planned.label && planned.label in edgeOrders) edgeOrders[planned.label as keyof typeof EDGES] = id;
      else if (planned.label) handOrders[planned.label] = id;
    }

    // After the orders: a product renamed (reports show the name now) and one moved to another
    // category (its lines stay in the category they were ordered in).
    await updateProductContent(h.db, shop.actor(), hand.perfume, anyVersion, { name: 'Royal Oud Perfume 100 ml (2027)' });
    products.set(hand.perfume, { name: 'Royal Oud Perfume 100 ml (2027)', category: perfumes });
    await updateProductContent(h.db, shop.actor(), hand.oudChips, anyVersion, { category: 'Perfumes' });

    h.clock.set(NOW);
    tokens.analytics = await tokenWithScopes(h, shop.store, ['analytics:read']);
    tokens.orders = await tokenWithScopes(h, shop.store, ['orders:read']);
    tokens.otherAnalytics = await tokenWithScopes(h, other.store, ['analytics:read']);
    tokens.otherOrders = await tokenWithScopes(h, other.store, ['orders:read']);
  }, SETUP_MS);

  const get = (target: Shop, path: string, token: string, query: Record<string, string> = {}) =>
    request(h.app).get(`/stores/${target.storeId}/v1/${path}`).query(query).set('Authorization', `Bearer ${token}`);

  /** Every order of the store, as `GET …/orders` shows it, walking its pages. */
  async function ordersOf(target: Shop, token: string): Promise<OrderBody[]> {
    return (await walkList<OrderBody>((cursor) => get(target, 'orders', token, withCursor({ limit: '100' }, cursor)))).items;
  }

  /** The four reports of a range, as the API answers them, each checked to carry the analytics meta. */
  async function reportsOf(target: Shop, token: string, range: { from: string; to: string }) {
    const bodies = await Promise.all(
      REPORTS.map(async (report) => {
        const response = await get(target, `analytics/${report}`, token, range);
        expect(response.status).toBe(200);
        expect(response.body.meta).toEqual({
          request_id: response.headers['x-request-id'],
          from: range.from,
          to: range.to,
          timezone: 'Asia/Riyadh',
          currency: 'SAR',
          generated_at: toIso(NOW),
        });
        return response.body.data;
      }),
    );
    const [overview, sales, byProduct, byCategory] = bodies;
    return { overview, sales, products: byProduct, categories: byCategory } as Omit<ExpectedReports, 'counted'>;
  }

  async function expectReportsOfOrders(
    target: Shop,
    range: { from: string; to: string },
    facts = products,
    token = tokens.analytics,
    ordersToken = tokens.orders,
  ) {
    const expected = expectedReports(await ordersOf(target, ordersToken), range.from, range.to, facts);
    const { overview, sales, products: byProduct, categories } = expected;
    expect(await reportsOf(target, token, range)).toEqual({ overview, sales, products: byProduct, categories });
    return expected;
  }

  it('equals a computation over the orders read back, for a 90-day range', async () => {
    const { counted, sales, overview } = await expectReportsOfOrders(shop, RANGE);
    // The data is what the rules are about: refunded and cancelled orders, coupons, zero days, several lines.
    const orders = await ordersOf(shop, tokens.orders);
    expect(orders.some((order) => order.payment_status === 'refunded' && order.status !== 'cancelled')).toBe(true);
    expect(orders.filter((order) => order.status === 'cancelled').length).toBeGreaterThan(10);
    expect(counted.filter((order) => order.amounts.discount !== '0.00').length).toBeGreaterThan(10);
    expect(sales).toHaveLength(90);
    expect(sales.filter((point) => point.orders_count === 0).length).toBeGreaterThanOrEqual(QUIET_WEEK.length);
    expect(overview.orders_count).toBeGreaterThan(60);
  });

  it('holds the VAT rule on every order: 15 % of (subtotal − discount + shipping), half up, once per order', async () => {
    for (const order of await ordersOf(shop, tokens.orders))
      expect({ id: order.id, tax: halalasOf(order.amounts.tax) }).toEqual({ id: order.id, tax: vatOf(order) });
  });

  it('answers a single day, worked out by hand: cancelled left out, refunded kept, the discount shared by line totals', async () => {
    const day = { from: HAND_DAY, to: HAND_DAY };
    await expectReportsOfOrders(shop, day);
    const { overview, sales, products: byProduct, categories } = await reportsOf(shop, tokens.analytics, day);
    // Counted: 589.00 − 10 % (58.90) + 30.00 shipping, VAT 84.02 (84.015 up); 100.00 digital, VAT 15.00;
    // 3 × 50.00 service, no shipping, VAT 22.50. The cancelled 2 × 349.00 + 45.00 is left out.
    const dayFigures = { gross_sales: '839.00', discounts: '58.90', net_sales: '780.10', total_sales: '931.62', orders_count: 3, items_sold: 7 };
    expect(overview).toEqual({ ...dayFigures, tax: '121.52', shipping: '30.00', average_order_value: '260.03', customers: 2 });
    expect(sales).toEqual([{ date: HAND_DAY, ...dayFigures }]);
    expect(byProduct).toEqual([
      { product_id: hand.perfume, name: 'Royal Oud Perfume 100 ml (2027)', items_sold: 1, orders_count: 1, net_sales: '314.10' },
      { product_id: hand.oudChips, name: 'Cambodian Oud Chips', items_sold: 2, orders_count: 1, net_sales: '216.00' },
      { product_id: hand.massage, name: 'Oud Massage', items_sold: 3, orders_count: 1, net_sales: '150.00' },
      { product_id: hand.giftCard, name: 'Gift card', items_sold: 1, orders_count: 1, net_sales: '100.00' },
    ]);
    // The chips were in Oud when ordered (moved to Perfumes since); the gift card's order counts once more in Perfumes.
    expect(categories).toEqual([
      { category_id: expect.any(Number), category: 'Perfumes', items_sold: 2, orders_count: 2, net_sales: '414.10' },
      { category_id: expect.any(Number), category: 'Oud', items_sold: 2, orders_count: 1, net_sales: '216.00' },
      { category_id: null, category: null, items_sold: 3, orders_count: 1, net_sales: '150.00' },
    ]);
    expect(byProduct.map((line) => line.product_id)).not.toContain(hand.amber);
  });

  it('counts an order on its Riyadh day: 20:59:59Z is the day before, 21:00:00Z the next', async () => {
    const oneOrder = { orders_count: 1, items_sold: 1, gross_sales: '120.00', discounts: '0.00', net_sales: '120.00', total_sales: '172.50' };
    const pointOf = async (date: string) => (await reportsOf(shop, tokens.analytics, { from: date, to: date })).sales;
    expect(await pointOf('2026-08-22')).toEqual([{ date: '2026-08-22', ...oneOrder }]);
    expect(await pointOf('2026-11-21')).toEqual([{ date: '2026-11-21', ...oneOrder }]);
    const orders = await ordersOf(shop, tokens.orders);
    const dayOf = (id: number) => riyadhDayOf(orders.find((order) => order.id === id)?.created_at ?? '');
    expect([dayOf(edgeOrders.beforeFrom), dayOf(edgeOrders.atFrom), dayOf(edgeOrders.beforeTo), dayOf(edgeOrders.afterTo)]).toEqual([
      '2026-08-22',
      RANGE.from,
      RANGE.to,
      '2026-11-21',
    ]);
    // The 90-day range holds the two orders inside its edges and neither outside.
    const { counted } = await expectReportsOfOrders(shop, RANGE);
    const countedIds = counted.map((order) => order.id);
    expect(countedIds).toEqual(expect.arrayContaining([edgeOrders.atFrom, edgeOrders.beforeTo]));
    expect(countedIds).not.toContain(edgeOrders.beforeFrom);
    expect(countedIds).not.toContain(edgeOrders.afterTo);
    // Ranges across each edge: one edge order on either side of their middle midnight.
    await expectReportsOfOrders(shop, { from: '2026-08-22', to: '2026-08-23' });
    await expectReportsOfOrders(shop, { from: '2026-11-20', to: '2026-11-21' });
  });

  it('answers zeros for a range with no orders, every day present', async () => {
    const empty = { from: '2026-01-01', to: '2026-03-31' };
    const { overview, sales, products: byProduct, categories } = await reportsOf(shop, tokens.analytics, empty);
    expect(overview).toEqual({
      gross_sales: '0.00',
      discounts: '0.00',
      net_sales: '0.00',
      tax: '0.00',
      shipping: '0.00',
      total_sales: '0.00',
      orders_count: 0,
      average_order_value: '0.00',
      items_sold: 0,
      customers: 0,
    });
    expect(sales.map((point) => point.date)).toEqual(daysBetween(empty.from, empty.to));
    for (const point of sales) {
      expect(point).toEqual({
        date: point.date,
        orders_count: 0,
        items_sold: 0,
        gross_sales: '0.00',
        discounts: '0.00',
        net_sales: '0.00',
        total_sales: '0.00',
      });
    }
    expect(byProduct).toEqual([]);
    expect(categories).toEqual([]);
    expect(sales).toHaveLength(90);
  });

  it('answers the 367 points of the longest range, ending today', async () => {
    const longest = { from: '2025-11-21', to: '2026-11-22' };
    const { sales } = await expectReportsOfOrders(shop, longest);
    expect(sales).toHaveLength(367);
  });

  it("never counts another store's orders, and each store's reports are its own orders'", async () => {
    const otherReports = await expectReportsOfOrders(other, RANGE, otherProducts, tokens.otherAnalytics, tokens.otherOrders);
    expect(otherReports.overview).toMatchObject({ orders_count: 3, gross_sales: '3000.00', customers: 1 });
    const { overview } = await reportsOf(shop, tokens.analytics, { from: HAND_DAY, to: HAND_DAY });
    expect(overview.orders_count).toBe(3);
    // A token of one store does not reach the other's reports.
    const response = await get(other, 'analytics/overview', tokens.analytics, RANGE);
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('STORE_NOT_FOUND');
  });

  it('reads the rollups, never the orders, whatever the report', async () => {
    const statements: string[] = [];
    const listen = (query: { sql: string }) => statements.push(query.sql);
    h.db.on('query', listen);
    try {
      await reportsOf(shop, tokens.analytics, { from: '2026-08-24', to: RANGE.to }); // a range no other test asks: no overview kept
    } finally {
      h.db.off('query', listen);
    }
    const analytics = statements.filter((sql) => /daily_/.test(sql));
    expect(analytics.length).toBeGreaterThanOrEqual(REPORTS.length);
    for (const sql of statements) expect(sql).not.toMatch(/\border(s|_items)\b/);
  });

  it('adds up: the days sum to the overview, the products and the categories to its net sales', async () => {
    const { overview, sales, categories } = await reportsOf(shop, tokens.analytics, RANGE);
    const sum = (values: string[]) => values.reduce((total, value) => total + halalasOf(value), 0);
    expect(sum(sales.map((point) => point.net_sales))).toBe(halalasOf(overview.net_sales));
    expect(sum(sales.map((point) => point.total_sales))).toBe(halalasOf(overview.total_sales));
    expect(sum(categories.map((line) => line.net_sales))).toBe(halalasOf(overview.net_sales));
  });

  // Last: it places an order today, after every other test's figures were taken.
  it('keeps an overview of a range while the store’s rollups stay as they were, and counts again once an order changes them', async () => {
    const range = { from: '2026-11-21', to: '2026-11-22' };
    const counts: string[] = [];
    const listen = (query: { sql: string }) => {
      if (/count\(distinct/.test(query.sql)) counts.push(query.sql);
    };
    const overview = async () => {
      const response = await get(other, 'analytics/overview', tokens.otherAnalytics, range);
      expect(response.status).toBe(200);
      return response.body.data as { orders_count: number; customers: number; net_sales: string };
    };
    h.db.on('query', listen);
    try {
      const before = await overview();
      expect(await overview()).toEqual(before);
      expect(counts).toHaveLength(1); // the second answer was the kept one
      expect(before).toMatchObject({ orders_count: 0, customers: 0, net_sales: '0.00' });

      const [productId] = [...otherProducts.keys()] as [number];
      await place(other, { at: NOW, customerId: other.customer.id, items: [{ productId, quantity: 1 }], fate: 'paid' });
      h.clock.set(NOW);
      expect(await overview()).toMatchObject({ orders_count: 1, customers: 1, net_sales: '500.00' });
      expect(counts).toHaveLength(2);
      // Another store's orders do not touch this store's kept answers.
      await place(shop, { at: NOW, customerId: shop.customer.id, items: [{ productId: hand.oudChips, quantity: 1 }], fate: 'paid' });
      h.clock.set(NOW);
      expect(await overview()).toMatchObject({ orders_count: 1, customers: 1 });
      expect(counts).toHaveLength(2);
    } finally {
      h.db.off('query', listen);
    }
  });
});
