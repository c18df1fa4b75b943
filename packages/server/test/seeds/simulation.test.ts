import request from 'supertest';
import { toIso } from '../../src/core/clock';
import { PlatformError } from '../../src/platform/stores';
import { seedDemoCatalog } from '../../src/seeds/demo-catalog';
import { type SimulationSummary, simulateStore } from '../../src/seeds/simulation/run';
import { tokenWithScopes } from '../support/catalog-fixtures';
import { testDatabases } from '../support/databases';
import { createTestStore, type StoreFixture, suiteHarness } from '../support/harness';
import { walkList, withCursor } from '../support/list-walk';
import { eventSchemaErrors, eventsOf, forSale, openShop } from '../support/storefront-fixtures';

/** Far from the wall clock, so an instant taken from the machine's time instead of the injected clock shows. */
const NOW = Date.parse('2025-06-15T12:34:56.789Z');
const DAY = 86_400_000;
const RUN = { days: 30, orders: 200, seed: 42 };

/** The calendar day in Riyadh by the platform's own time-zone data (not the code under test's offset). */
const riyadhDate = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Riyadh', year: 'numeric', month: '2-digit', day: '2-digit' });
const dayInRiyadh = (instant: number | string) => riyadhDate.format(new Date(instant));
const halalasOf = (money: string) => Number(money.replace('.', ''));

interface OrderBody {
  id: number;
  reference: string;
  status: string;
  payment_status: string;
  customer: { id: number; name: string };
  items: Array<{ id: number; product_id: number; name: string; quantity: number; unit_price: string; total: string; product_kind: string }>;
  amounts: Record<'subtotal' | 'discount' | 'shipping' | 'tax' | 'total', string>;
  coupon_code: string | null;
  created_at: string;
  paid_at: string | null;
  updated_at: string;
}

/** What a store's orders are, without its ids (two stores never share ids): what the same seed must repeat. */
const comparable = (orders: readonly OrderBody[]) =>
  orders.map(({ reference, status, payment_status, customer, items, amounts, coupon_code, created_at, paid_at, updated_at }) => ({
    reference,
    status,
    payment_status,
    customer: customer.name,
    items: items.map(({ name, quantity, unit_price, total, product_kind }) => ({ name, quantity, unit_price, total, product_kind })),
    amounts,
    coupon_code,
    created_at,
    paid_at,
    updated_at,
  }));

describe.each(testDatabases())('the store simulator on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });

  interface Simulated {
    fixture: StoreFixture;
    storeId: string;
    summary: SimulationSummary;
    /** Each product's stock before the run: quantity, or a digital product's unsold units. */
    stockBefore: Map<number, number>;
    orders: OrderBody[];
  }

  async function stockOf(storeId: string): Promise<Map<number, number>> {
    const products = await h.db('products').where({ store_id: storeId }).select('id', 'product_kind', 'quantity');
    const units = await h.db('digital_units').where({ store_id: storeId }).whereNull('delivered_at').select('product_id');
    return new Map(
      products.map((product) => [
        Number(product.id),
        product.product_kind === 'digital' ? units.filter((unit) => Number(unit.product_id) === Number(product.id)).length : Number(product.quantity),
      ]),
    );
  }

  /** Every order of the store, through orders.list (response validation on: each one matches the spec). */
  async function ordersThroughApi(fixture: StoreFixture): Promise<OrderBody[]> {
    const token = await tokenWithScopes(h, fixture, ['orders:read']);
    const { items } = await walkList<OrderBody>((cursor) =>
      request(h.app)
        .get(`/stores/${fixture.store.id}/v1/orders`)
        .query(withCursor({ limit: 100 }, cursor))
        .set('Authorization', `Bearer ${token}`),
    );
    return items;
  }

  /** A fresh store with the demo catalog (the same products in every store), simulated with `seed`. */
  async function simulatedStore(seed: number): Promise<Simulated> {
    h.clock.set(NOW - 400 * DAY);
    const fixture = await createTestStore(h, 'Oud House');
    const storeId = fixture.store.id;
    await seedDemoCatalog(h.services, storeId);
    const stockBefore = await stockOf(storeId);
    h.clock.set(NOW);
    const summary = await simulateStore(h.services, { storeId, ...RUN, seed });
    return { fixture, storeId, summary, stockBefore, orders: await ordersThroughApi(fixture) };
  }

  let first: Simulated;
  let again: Simulated;
  let otherSeed: Simulated;

  beforeAll(async () => {
    first = await simulatedStore(RUN.seed);
    again = await simulatedStore(RUN.seed);
    otherSeed = await simulatedStore(RUN.seed + 1);
  }, 300_000);

  const rowsOf = (table: string, storeId: string) => h.db(table).where({ store_id: storeId });

  it('places the asked number of orders, and the same seed gives the same orders in another fresh store', () => {
    expect(first.orders).toHaveLength(RUN.orders);
    expect(first.summary.orders).toBe(RUN.orders);
    expect(comparable(again.orders)).toEqual(comparable(first.orders));
    expect(again.summary).toEqual(first.summary);
    expect(new Set(first.orders.map((order) => order.reference)).size).toBe(RUN.orders);
  });

  it('gives other orders for another seed', () => {
    expect(otherSeed.orders).toHaveLength(RUN.orders);
    const firstReferences = new Set(first.orders.map((order) => order.reference));
    expect(otherSeed.orders.some((order) => firstReferences.has(order.reference))).toBe(false);
    const shape = (orders: readonly OrderBody[]) => comparable(orders).map(({ reference: _, ...rest }) => rest);
    expect(shape(otherSeed.orders)).not.toEqual(shape(first.orders));
  });

  it('takes every instant from the injected clock: orders over the 30 Riyadh days before today, every change before now', async () => {
    const today = dayInRiyadh(NOW);
    const firstDay = dayInRiyadh(NOW - RUN.days * DAY);
    expect(first.summary.to).toBe(Date.parse(`${today}T00:00:00+03:00`));
    expect(first.summary.from).toBe(first.summary.to - RUN.days * DAY);
    for (const order of first.orders) {
      const day = dayInRiyadh(order.created_at);
      expect(day >= firstDay && day < today).toBe(true);
      expect(Date.parse(order.updated_at)).toBeLessThan(NOW);
      if (order.paid_at) expect(Date.parse(order.paid_at)).toBeGreaterThan(Date.parse(order.created_at));
    }
    const events = await rowsOf('outbox_events', first.storeId).max({ last: 'occurred_at' }).min({ earliest: 'occurred_at' });
    expect(Number(events[0]?.last)).toBeLessThan(NOW);
    expect(Number(events[0]?.earliest)).toBeGreaterThanOrEqual(first.summary.from - DAY);
  });

  it('includes paid, refunded and cancelled orders, failed payments, recovered and unrecovered carts, coupon use and reviews, as its summary counts them', async () => {
    const { summary, storeId, orders } = first;
    const count = (predicate: (order: OrderBody) => boolean) => orders.filter(predicate).length;
    expect(count((order) => order.paid_at !== null)).toBe(summary.paid);
    expect(count((order) => order.payment_status === 'refunded')).toBe(summary.refunded);
    expect(count((order) => order.status === 'cancelled')).toBe(summary.cancelled);
    expect(count((order) => order.coupon_code !== null)).toBe(summary.couponsUsed);
    const failed = await rowsOf('payments', storeId).where({ status: 'failed' });
    const carts = await rowsOf('abandoned_carts', storeId);
    const reviews = await rowsOf('reviews', storeId);
    expect(failed).toHaveLength(summary.failedPayments);
    expect(carts).toHaveLength(summary.carts);
    expect(carts.filter((cart) => cart.recovered_order_id !== null)).toHaveLength(summary.recovered);
    expect(reviews).toHaveLength(summary.reviews);
    expect(summary.customers).toBe(Number((await rowsOf('customers', storeId).count({ n: '*' }))[0]?.n));

    for (const kept of [summary.paid, summary.refunded, summary.cancelled, summary.failedPayments, summary.recovered, summary.reviews, summary.couponsUsed]) {
      expect(kept).toBeGreaterThan(0);
    }
    expect(summary.carts).toBeGreaterThan(summary.recovered);
    expect(count((order) => order.status === 'cancelled' && order.payment_status === 'refunded')).toBeGreaterThan(0); // cancelled after payment
    expect(count((order) => order.status === 'cancelled' && order.payment_status === 'unpaid')).toBeGreaterThan(0);
    expect(count((order) => order.status === 'delivered')).toBeGreaterThan(0);
    expect(new Set(orders.flatMap((order) => order.items.map((item) => item.product_kind)))).toEqual(new Set(['physical', 'digital', 'service']));
  });

  it('keeps stock at or above zero, equal to the stock before plus the inventory adjustments, and restocks through them', async () => {
    const { storeId, stockBefore } = first;
    const stockAfter = await stockOf(storeId);
    const adjustments = await rowsOf('inventory_adjustments', storeId).orderBy('id');
    expect(adjustments.filter((adjustment) => adjustment.reason === 'restock')).toHaveLength(first.summary.restocks);
    expect(first.summary.restocks).toBeGreaterThan(0);
    const products = await rowsOf('products', storeId).select('id', 'product_kind');
    const sold = await h.db('digital_units').where({ store_id: storeId }).whereNotNull('delivered_at').select('product_id');
    for (const { id, product_kind: kind } of products) {
      const own = adjustments.filter((adjustment) => Number(adjustment.product_id) === Number(id));
      const after = stockAfter.get(Number(id)) ?? 0;
      expect(after).toBeGreaterThanOrEqual(0);
      for (const adjustment of own) {
        expect(Number(adjustment.quantity_after)).toBeGreaterThanOrEqual(0);
        expect(Number(adjustment.quantity_after)).toBe(Number(adjustment.quantity_before) + Number(adjustment.delta));
      }
      const added = own.reduce((sum, adjustment) => sum + Number(adjustment.delta), 0);
      // A digital product's stock is its unsold units: units leave it when paid orders take them, not by adjustments.
      const delivered = kind === 'digital' ? sold.filter((unit) => Number(unit.product_id) === Number(id)).length : 0;
      expect(after).toBe((stockBefore.get(Number(id)) ?? 0) + added - delivered);
    }
  });

  /** The paid digital lines of a run, each checked against the units delivered with it; how many were refunded since. */
  async function checkDigitalLines({ storeId, orders }: Simulated): Promise<{ lines: number; refunded: number }> {
    const units = await h.db('digital_units').where({ store_id: storeId }).whereNotNull('order_item_id');
    const paidDigital = orders
      .filter((order) => order.paid_at !== null)
      .flatMap((order) => order.items.filter((item) => item.product_kind === 'digital').map((item) => ({ order, item })));
    for (const { order, item } of paidDigital) {
      const delivered = units.filter((unit) => Number(unit.order_item_id) === item.id);
      expect(delivered).toHaveLength(item.quantity);
      for (const unit of delivered) {
        expect(Number(unit.product_id)).toBe(item.product_id);
        expect(Number(unit.order_id)).toBe(order.id);
        expect(toIso(Number(unit.delivered_at))).toBe(order.paid_at);
        expect(Number(unit.created_at)).toBeLessThanOrEqual(Number(unit.delivered_at)); // only units there before the sale
      }
    }
    expect(units).toHaveLength(paidDigital.reduce((sum, { item }) => sum + item.quantity, 0));
    expect(new Set(units.map((unit) => Number(unit.id))).size).toBe(units.length);
    return { lines: paidDigital.length, refunded: paidDigital.filter(({ order }) => order.payment_status === 'refunded').length };
  }

  it('gives every paid digital line exactly its quantity of units, each once, and leaves them delivered after a refund', async () => {
    const checked = [await checkDigitalLines(first), await checkDigitalLines(otherSeed)];
    expect(checked.every(({ lines }) => lines > 0)).toBe(true);
    // Seed 43 refunds some digital orders (cancelled after payment): their units stay delivered.
    expect(checked.reduce((sum, { refunded }) => sum + refunded, 0)).toBeGreaterThan(0);
  });

  it("takes every payment attempt for its order's total", async () => {
    const payments = await rowsOf('payments', first.storeId);
    const totals = new Map(first.orders.map((order) => [order.id, halalasOf(order.amounts.total)]));
    expect(payments.length).toBe(first.summary.paid + first.summary.failedPayments);
    for (const payment of payments) expect(Number(payment.amount_halalas)).toBe(totals.get(Number(payment.order_id)));
  });

  it("recovers a cart as an order of the cart's customer, after the cart; reviews come from the reviewer's delivered order holding the product, after it", async () => {
    const byId = new Map(first.orders.map((order) => [order.id, order]));
    const carts = await rowsOf('abandoned_carts', first.storeId).whereNotNull('recovered_order_id');
    for (const cart of carts) {
      const order = byId.get(Number(cart.recovered_order_id));
      expect(order?.customer.id).toBe(Number(cart.customer_id));
      expect(Date.parse(order?.created_at ?? '')).toBeGreaterThan(Number(cart.created_at));
      const lines = await h.db('abandoned_cart_items').where({ cart_id: cart.id }).orderBy('product_id');
      expect(lines.map((line) => [Number(line.product_id), line.quantity])).toEqual(
        [...(order?.items ?? [])].sort((a, b) => a.product_id - b.product_id).map((item) => [item.product_id, item.quantity]),
      );
    }
    const reviews = await rowsOf('reviews', first.storeId);
    for (const review of reviews) {
      const order = byId.get(Number(review.order_id));
      expect(order?.customer.id).toBe(Number(review.customer_id));
      expect(order?.status).toBe('delivered');
      expect(order?.items.some((item) => item.product_id === Number(review.product_id))).toBe(true);
      expect(Date.parse(order?.created_at ?? '')).toBeLessThan(Number(review.created_at));
    }
  });

  it('writes the outbox event of every change, each valid against its webhook schema', async () => {
    const { storeId, orders, summary } = first;
    const events = await eventsOf(h.db, storeId);
    expect(events.flatMap(eventSchemaErrors)).toEqual([]);
    expect(events).toHaveLength(summary.events);
    const typed = (type: string) => events.filter((event) => event.type === type);
    const orderIdsOf = (type: string) => typed(type).map((event) => (event.payload.data.order as { id: number }).id);
    const idsWhere = (predicate: (order: OrderBody) => boolean) =>
      orders
        .filter(predicate)
        .map((order) => order.id)
        .sort((a, b) => a - b);
    const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);
    expect(sorted(orderIdsOf('order.created'))).toEqual(idsWhere(() => true));
    expect(sorted(orderIdsOf('order.paid'))).toEqual(idsWhere((order) => order.paid_at !== null));
    expect(sorted(orderIdsOf('order.cancelled'))).toEqual(idsWhere((order) => order.status === 'cancelled'));
    // order.updated: one per fulfilment step (shipped, delivered; a parcel-free order goes straight to
    // delivered), one per refund, and one beside each order.paid and order.cancelled (the same change).
    const ships = (order: OrderBody) => order.items.some((item) => item.product_kind === 'physical');
    const expectedUpdates = orders.reduce((sum, order) => {
      const steps = order.status === 'shipped' ? 1 : order.status === 'delivered' ? (ships(order) ? 2 : 1) : 0;
      const refunded = order.payment_status === 'refunded' && order.status !== 'cancelled' ? 1 : 0;
      const paired = (order.paid_at !== null ? 1 : 0) + (order.status === 'cancelled' ? 1 : 0);
      return sum + steps + refunded + paired;
    }, 0);
    expect(typed('order.updated')).toHaveLength(expectedUpdates);
    expect(typed('abandoned_cart.created')).toHaveLength(summary.carts);
    expect(typed('review.created')).toHaveLength(summary.reviews);
    const adjustments = await rowsOf('inventory_adjustments', storeId);
    expect(typed('inventory.adjusted')).toHaveLength(adjustments.length);
    for (const event of events) expect(event.installation_id).toBeNull();
  });

  it('keeps the daily rollups equal to a sum over the orders by Riyadh day, cancelled orders left out', async () => {
    const expected = new Map<string, { gross: number; discounts: number; tax: number; shipping: number; orders: number; items: number }>();
    for (const order of first.orders) {
      if (order.status === 'cancelled') continue;
      const day = dayInRiyadh(order.created_at);
      const sums = expected.get(day) ?? { gross: 0, discounts: 0, tax: 0, shipping: 0, orders: 0, items: 0 };
      for (const item of order.items) {
        sums.gross += halalasOf(item.total);
        sums.items += item.quantity;
      }
      sums.discounts += halalasOf(order.amounts.discount);
      sums.tax += halalasOf(order.amounts.tax);
      sums.shipping += halalasOf(order.amounts.shipping);
      sums.orders += 1;
      expected.set(day, sums);
    }
    const stored = await rowsOf('daily_sales', first.storeId);
    expect(
      new Map(
        stored.map((row) => [
          row.day as string,
          {
            gross: Number(row.gross_halalas),
            discounts: Number(row.discount_halalas),
            tax: Number(row.tax_halalas),
            shipping: Number(row.shipping_halalas),
            orders: Number(row.orders_count),
            items: Number(row.items_sold),
          },
        ]),
      ),
    ).toEqual(expected);
  });

  it('refuses a seed the store already ran, and changes nothing', async () => {
    const before = await rowsOf('orders', first.storeId).count({ n: '*' });
    await expect(simulateStore(h.services, { storeId: first.storeId, ...RUN })).rejects.toThrow(
      new PlatformError(`Store ${first.storeId} already holds the simulation of seed ${RUN.seed} (its orders and coupons): run again with another --seed.`),
    );
    expect(await rowsOf('orders', first.storeId).count({ n: '*' })).toEqual(before);
  });

  it('refuses a store with no active, priced product, and an unknown store, with a clear message', async () => {
    const shop = await openShop(h);
    await forSale(h, shop, 1000, { status: 'inactive' });
    await forSale(h, shop, 0, { price_state: 'required' });
    await expect(simulateStore(h.services, { storeId: shop.storeId, ...RUN })).rejects.toThrow(/has no active, priced products/);
    expect(await rowsOf('orders', shop.storeId)).toHaveLength(0);
    expect(await rowsOf('coupons', shop.storeId)).toHaveLength(0);
    const missing = '00000000-0000-4000-8000-000000000000';
    await expect(simulateStore(h.services, { storeId: missing, ...RUN })).rejects.toThrow(`No store ${missing}`);
  });

  it('refuses bounds it does not take', async () => {
    for (const wrong of [{ days: 0 }, { days: 367 }, { orders: 0 }, { orders: 1_000_001 }, { seed: -1 }, { seed: 2 ** 32 }, { days: 1.5 }]) {
      await expect(simulateStore(h.services, { storeId: first.storeId, ...RUN, ...wrong })).rejects.toThrow(RangeError);
    }
  });
});
