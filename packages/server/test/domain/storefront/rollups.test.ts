import { cancelOrder, payOrder, placeOrder, refundOrder } from '../../../src/domain/storefront/orders/changes';
import { getOrder } from '../../../src/domain/storefront/orders/queries';
import type { Order } from '../../../src/domain/storefront/orders/row';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { forSale, insertCoupon, openShop, type Shop } from '../../support/storefront-fixtures';

/** The calendar day in Riyadh by the platform's own time-zone data (not the code under test's offset). */
const riyadhDate = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Riyadh', year: 'numeric', month: '2-digit', day: '2-digit' });
const dayInRiyadh = (iso: string) => riyadhDate.format(new Date(iso));

/** Halalas of a `"0.00"` amount, read digit by digit. */
const halalasOf = (money: string) => Number(money.replace('.', ''));

/** A small repeatable generator (mulberry32), so the orders below are the same on every run. */
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

interface DaySums {
  gross: number;
  discounts: number;
  tax: number;
  shipping: number;
  orders: number;
  items: number;
  customers: Set<number>;
}

/** The day sums, computed in the test from the orders as the interface shows them. */
function expectedDays(orders: readonly Order[]): Map<string, DaySums> {
  const days = new Map<string, DaySums>();
  for (const order of orders) {
    if (order.status === 'cancelled') continue;
    const day = dayInRiyadh(order.created_at);
    const sums = days.get(day) ?? { gross: 0, discounts: 0, tax: 0, shipping: 0, orders: 0, items: 0, customers: new Set<number>() };
    for (const item of order.items) {
      sums.gross += halalasOf(item.total);
      sums.items += item.quantity;
    }
    sums.discounts += halalasOf(order.amounts.discount);
    sums.tax += halalasOf(order.amounts.tax);
    sums.shipping += halalasOf(order.amounts.shipping);
    sums.orders += 1;
    sums.customers.add(order.customer.id);
    days.set(day, sums);
  }
  return days;
}

describe.each(testDatabases())('daily sales rollups on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let shop: Shop;

  beforeEach(async () => {
    shop = await openShop(h);
  });

  async function storedDays() {
    const rows = await h.db('daily_sales').where({ store_id: shop.storeId }).orderBy('day');
    const customers = await h.db('daily_customer_sales').where({ store_id: shop.storeId }).select('day', 'customer_id');
    return new Map(
      rows.map((row) => [
        row.day as string,
        {
          gross: Number(row.gross_halalas),
          discounts: Number(row.discount_halalas),
          tax: Number(row.tax_halalas),
          shipping: Number(row.shipping_halalas),
          orders: Number(row.orders_count),
          items: Number(row.items_sold),
          customers: new Set(customers.filter((customer) => customer.day === row.day).map((customer) => Number(customer.customer_id))),
        },
      ]),
    );
  }

  it('equals an independent sum over the orders of each Riyadh day, with edges on Riyadh midnight (21:00 UTC), cancelled orders left out, refunds kept', async () => {
    const products = [await forSale(h, shop, 34_900, { quantity: 10_000 }), await forSale(h, shop, 2_550, { quantity: 10_000, product_kind: 'service' })];
    await insertCoupon(h.db, shop.storeId, 'TEN', { type: 'percentage', amount_halalas: 1000 });
    await insertCoupon(h.db, shop.storeId, 'FIVE', { type: 'fixed', amount_halalas: 500, free_shipping: true });
    const random = seeded(20261123);
    const customers = [shop.customer.id, shop.other.id];
    // Instants on both sides of three Riyadh midnights, and spread over the days between.
    const edges = ['2026-11-18T20:59:59.999Z', '2026-11-18T21:00:00.000Z', '2026-11-19T20:59:59.999Z', '2026-11-19T21:00:00.000Z', '2026-11-20T21:00:00.000Z'];
    const spread = Array.from({ length: 25 }, () => Date.parse('2026-11-17T00:00:00Z') + random(5 * 86_400_000));
    const ids: number[] = [];
    for (const instant of [...edges.map((edge) => Date.parse(edge)), ...spread]) {
      h.clock.set(instant);
      const lines = random(2) === 0 ? [products[0]] : products;
      const order = await placeOrder(h.db, shop.actor(), {
        customerId: customers[random(2)] as number,
        items: lines.map((productId) => ({ productId: productId as number, quantity: 1 + random(3) })),
        couponCode: [null, 'TEN', 'FIVE'][random(3)] ?? null,
      });
      ids.push(order.id);
      h.clock.advance(60_000);
      const fate = random(5);
      if (fate >= 2) await payOrder(h.db, shop.actor(), order.id, { method: 'cod' });
      if (fate === 3) await refundOrder(h.db, shop.actor(), order.id);
      if (fate === 1 || fate === 4) await cancelOrder(h.db, shop.actor(), order.id);
    }
    const orders = await Promise.all(ids.map((id) => getOrder(h.db, shop.storeId, id)));
    expect(orders.some((order) => order.status === 'cancelled')).toBe(true);
    expect(orders.some((order) => order.payment_status === 'refunded' && order.status !== 'cancelled')).toBe(true);
    expect(await storedDays()).toEqual(expectedDays(orders));
    const edgeDays = [...(await storedDays()).keys()];
    expect(edgeDays).toEqual(expect.arrayContaining(['2026-11-19', '2026-11-20', '2026-11-21']));
  });

  it('shares an order’s discount among its lines by largest remainder, ties to the lower line id, in the product and category rollups', async () => {
    const category = Number(
      (
        (await h
          .db('categories')
          .insert({ store_id: shop.storeId, name: 'Perfumes', name_key: 'perfumes', created_at: 0, updated_at: 0 })
          .returning('id')) as Array<number | { id: number }>
      ).map((row) => (typeof row === 'number' ? row : row.id))[0],
    );
    const [a, b, c] = [await forSale(h, shop, 1_000, { category_id: category }), await forSale(h, shop, 1_000), await forSale(h, shop, 1_000)];
    await insertCoupon(h.db, shop.storeId, 'ONE', { type: 'fixed', amount_halalas: 100 });
    h.clock.set('2026-11-22T09:00:00Z');
    await placeOrder(h.db, shop.actor(), {
      customerId: shop.customer.id,
      items: [a, b, c].map((productId) => ({ productId: productId as number, quantity: 1 })),
      couponCode: 'ONE',
    });
    const byProduct = await h.db('daily_product_sales').where({ store_id: shop.storeId, day: '2026-11-22' }).orderBy('product_id');
    expect(byProduct.map((row) => [Number(row.product_id), Number(row.net_halalas), Number(row.quantity), Number(row.orders_count)])).toEqual([
      [a, 1_000 - 34, 1, 1],
      [b, 1_000 - 33, 1, 1],
      [c, 1_000 - 33, 1, 1],
    ]);
    const byCategory = await h.db('daily_category_sales').where({ store_id: shop.storeId, day: '2026-11-22' }).orderBy('category_key');
    expect(byCategory.map((row) => [Number(row.category_key), Number(row.net_halalas), Number(row.quantity), Number(row.orders_count)])).toEqual([
      [0, 2_000 - 66, 2, 1],
      [category, 1_000 - 34, 1, 1],
    ]);
  });

  it('takes a cancelled order out of every rollup it was in, and leaves no empty rows behind', async () => {
    const oud = await forSale(h, shop, 1_000);
    h.clock.set('2026-11-22T09:00:00Z');
    const order = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 2 }] });
    await payOrder(h.db, shop.actor(), order.id, { method: 'bank_transfer' });
    await cancelOrder(h.db, shop.actor(), order.id);
    for (const table of ['daily_sales', 'daily_customer_sales', 'daily_product_sales', 'daily_category_sales']) {
      expect(await h.db(table).where({ store_id: shop.storeId })).toEqual([]);
    }
  });
});
