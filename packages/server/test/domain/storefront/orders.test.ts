import type { Knex } from 'knex';
import { toIso } from '../../../src/core/clock';
import { cancelOrder, failPayment, fulfilOrder, payOrder, placeOrder, refundOrder } from '../../../src/domain/storefront/orders/changes';
import { getOrder } from '../../../src/domain/storefront/orders/queries';
import { insertProduct, productRow } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { digitalForSale, eventSchemaErrors, eventsOf, forSale, insertCoupon, openShop, type Shop } from '../../support/storefront-fixtures';

const MADA = { method: 'mada' as const, card: { brand: 'mada' as const, last4: '4821' } };

/** Everything an order placement may touch in the store, to compare before and after a refusal. */
async function storeState(db: Knex, storeId: string) {
  const count = async (table: string) => Number((await db(table).where({ store_id: storeId }).count({ n: '*' }))[0]?.n);
  return {
    products: await db('products').where({ store_id: storeId }).orderBy('id').select('id', 'quantity', 'resource_version'),
    coupons: await db('coupons').where({ store_id: storeId }).orderBy('id').select('id', 'usage_count', 'resource_version'),
    units: await db('digital_units').where({ store_id: storeId }).orderBy('id').select('id', 'delivered_at', 'order_item_id'),
    orders: await db('orders').where({ store_id: storeId }).orderBy('id').select('id', 'status', 'payment_status', 'resource_version'),
    payments: await db('payments').where({ store_id: storeId }).orderBy('id').select('id', 'status'),
    sales: await db('daily_sales').where({ store_id: storeId }).orderBy('day'),
    events: await count('outbox_events'),
    adjustments: await count('inventory_adjustments'),
  };
}

describe.each(testDatabases())('storefront orders on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let shop: Shop;

  beforeEach(async () => {
    h.clock.advance(60_000);
    shop = await openShop(h);
  });

  /** The events written at the clock's current instant (each step below runs at its own instant). */
  const eventsNow = async () => (await eventsOf(h.db, shop.storeId)).filter((event) => Date.parse(event.payload.occurred_at) === h.clock.now());

  async function expectRefused(attempt: () => Promise<unknown>, code: string, field?: string) {
    const before = await storeState(h.db, shop.storeId);
    const refusal = attempt();
    await expect(refusal).rejects.toMatchObject({ code });
    if (field !== undefined) await expect(refusal).rejects.toMatchObject({ extras: { details: [expect.objectContaining({ field })] } });
    expect(await storeState(h.db, shop.storeId)).toEqual(before);
  }

  describe('placing an order', () => {
    it('prices the lines from the products, applies the coupon, ships the physical items, adds 15 % VAT, and writes order.created', async () => {
      const oud = await forSale(h, shop, 34_900, { name: 'Royal Oud Perfume 100 ml', quantity: 5 });
      const musk = await forSale(h, shop, 2_550, { name: 'مسك الطهارة 12 مل', quantity: 3 });
      await insertCoupon(h.db, shop.storeId, 'WELCOME10', { type: 'percentage', amount_halalas: 1000 });
      h.clock.advance(1000);
      const placed = await placeOrder(h.db, shop.actor(), {
        customerId: shop.customer.id,
        items: [
          { productId: oud, quantity: 1 },
          { productId: musk, quantity: 2 },
        ],
        couponCode: 'welcome10',
      });
      const order = await getOrder(h.db, shop.storeId, placed.id);
      expect(order).toMatchObject({
        status: 'pending',
        payment_status: 'unpaid',
        customer: { id: shop.customer.id, name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' },
        amounts: { subtotal: '400.00', discount: '40.00', shipping: '30.00', tax: '58.50', total: '448.50' },
        coupon_code: 'WELCOME10',
        paid_at: null,
        created_at: new Date(h.clock.now()).toISOString(),
      });
      expect(order.reference).toMatch(/^ORD-[0-9A-F]{10}$/);
      expect(order.items).toEqual([
        expect.objectContaining({
          product_id: oud,
          name: 'Royal Oud Perfume 100 ml',
          quantity: 1,
          unit_price: '349.00',
          total: '349.00',
          product_kind: 'physical',
          sku: null,
        }),
        expect.objectContaining({ product_id: musk, name: 'مسك الطهارة 12 مل', quantity: 2, unit_price: '25.50', total: '51.00', product_kind: 'physical' }),
      ]);
      expect((await productRow(h.db, oud)).quantity).toBe(4);
      expect((await productRow(h.db, musk)).quantity).toBe(1);
      expect(await h.db('coupons').where({ store_id: shop.storeId }).first('usage_count')).toEqual({ usage_count: 1 });

      const events = await eventsNow();
      expect(events.map((event) => event.type).sort()).toEqual([
        'inventory.adjusted',
        'inventory.adjusted',
        'order.created',
        'product.updated',
        'product.updated',
      ]);
      for (const event of events) expect(eventSchemaErrors(event)).toEqual([]);
      const created = events.find((event) => event.type === 'order.created');
      expect(created?.installation_id).toBeNull();
      expect(created?.payload.data).toEqual({ order });
      const adjusted = events.filter((event) => event.type === 'inventory.adjusted').map((event) => event.payload.data.adjustment);
      expect(adjusted).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ product_id: oud, delta: -1, reason: 'sale', quantity_after: 4 }),
          expect.objectContaining({ product_id: musk, delta: -2, reason: 'sale', quantity_after: 1 }),
        ]),
      );
    });

    it('adjusts no digital stock: an order of digital units alone writes order.created and no inventory.adjusted (its units go when it is paid)', async () => {
      const cards = await digitalForSale(h, shop, 3_000, ['D-1', 'D-2']);
      h.clock.advance(1000);
      await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: cards, quantity: 2 }] });
      expect((await eventsNow()).map((event) => event.type)).toEqual(['order.created']);
      expect(await h.db('inventory_adjustments').where({ store_id: shop.storeId, product_id: cards, reason: 'sale' })).toEqual([]);
    });

    it('keeps the price of the time on the line when the product changes later', async () => {
      const oud = await forSale(h, shop, 10_000);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] });
      await h.db('products').where({ id: oud }).update({ price_halalas: 99_900, name: 'Renamed' });
      const order = await getOrder(h.db, shop.storeId, placed.id);
      expect(order.items[0]).toMatchObject({ unit_price: '100.00', name: expect.not.stringContaining('Renamed') });
      expect(order.amounts.subtotal).toBe('100.00');
    });

    it('charges no shipping for digital and service items, and rounds VAT half up once per order', async () => {
      const card = await digitalForSale(h, shop, 30, ['A-1']);
      const session = await forSale(h, shop, 0 + 10, { product_kind: 'service', quantity: 4 });
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: card, quantity: 1 }] });
      expect((await getOrder(h.db, shop.storeId, placed.id)).amounts).toEqual({
        subtotal: '0.30',
        discount: '0.00',
        shipping: '0.00',
        tax: '0.05',
        total: '0.35',
      });
      const service = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: session, quantity: 3 }] });
      // Once per order: 15 % of 0.30 is 0.045 → 0.05 (per line it would be 3 × 0.015 → 0.06).
      expect((await getOrder(h.db, shop.storeId, service.id)).amounts).toEqual({
        subtotal: '0.30',
        discount: '0.00',
        shipping: '0.00',
        tax: '0.05',
        total: '0.35',
      });
      expect((await productRow(h.db, session)).quantity).toBe(1);
    });

    it('applies a fixed coupon no further than the subtotal, a free-shipping coupon, and a percentage half up', async () => {
      const oud = await forSale(h, shop, 100);
      await insertCoupon(h.db, shop.storeId, 'BIG', { type: 'fixed', amount_halalas: 5_000 });
      await insertCoupon(h.db, shop.storeId, 'SHIPFREE', { type: 'fixed', amount_halalas: 0, free_shipping: true });
      await insertCoupon(h.db, shop.storeId, 'EIGHTH', { type: 'percentage', amount_halalas: 1250 });
      const amountsWith = async (couponCode: string) =>
        (
          await getOrder(
            h.db,
            shop.storeId,
            (
              await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], couponCode })
            ).id,
          )
        ).amounts;
      expect(await amountsWith('BIG')).toEqual({ subtotal: '1.00', discount: '1.00', shipping: '30.00', tax: '4.50', total: '34.50' });
      expect(await amountsWith('shipfree')).toEqual({ subtotal: '1.00', discount: '0.00', shipping: '0.00', tax: '0.15', total: '1.15' });
      expect(await amountsWith('Eighth')).toEqual({ subtotal: '1.00', discount: '0.13', shipping: '30.00', tax: '4.63', total: '35.50' });
    });

    it('refuses a coupon outside its dates, past its usage limit, under its minimum, inactive or unknown, and changes nothing', async () => {
      const oud = await forSale(h, shop, 10_000);
      const now = h.clock.now();
      await insertCoupon(h.db, shop.storeId, 'LATER', { starts_at: now + 1 });
      await insertCoupon(h.db, shop.storeId, 'OVER', { expires_at: now - 1 });
      await insertCoupon(h.db, shop.storeId, 'USEDUP', { usage_limit: 2, usage_count: 2 });
      await insertCoupon(h.db, shop.storeId, 'MIN', { minimum_order_halalas: 10_001 });
      await insertCoupon(h.db, shop.storeId, 'OFF', { status: 'inactive' });
      for (const couponCode of ['LATER', 'OVER', 'USEDUP', 'MIN', 'OFF', 'NOSUCH']) {
        await expectRefused(
          () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], couponCode }),
          'COUPON_NOT_APPLICABLE',
          '/coupon_code',
        );
      }
      const other = await openShop(h);
      await insertCoupon(h.db, other.storeId, 'ELSEWHERE');
      await expectRefused(
        () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], couponCode: 'ELSEWHERE' }),
        'COUPON_NOT_APPLICABLE',
      );
    });

    it('honours a coupon exactly at its limits: from starts_at, until expires_at, up to the last use, at the minimum', async () => {
      const oud = await forSale(h, shop, 10_000);
      const now = h.clock.now();
      await insertCoupon(h.db, shop.storeId, 'EDGE', { starts_at: now, expires_at: now, usage_limit: 1, minimum_order_halalas: 10_000 });
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], couponCode: 'EDGE' });
      expect(placed.discount_halalas).toBe(1000);
      await expectRefused(
        () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], couponCode: 'EDGE' }),
        'COUPON_NOT_APPLICABLE',
      );
    });

    it('refuses inactive, unpriced, unknown and other stores’ products, an unknown customer and malformed lines, and changes nothing', async () => {
      const fine = await forSale(h, shop, 1_000);
      const inactive = await insertProduct(h.db, shop.storeId, { status: 'inactive', price_state: 'ready', price_halalas: 1_000, quantity: 5 });
      const unpriced = await insertProduct(h.db, shop.storeId, { status: 'active', price_state: 'required', quantity: 5 });
      const other = await openShop(h);
      const foreign = await forSale(h, other, 1_000);
      for (const productId of [inactive, unpriced, foreign, 999_999_999]) {
        await expectRefused(
          () =>
            placeOrder(h.db, shop.actor(), {
              customerId: shop.customer.id,
              items: [
                { productId: fine, quantity: 1 },
                { productId, quantity: 1 },
              ],
            }),
          'PRODUCT_UNAVAILABLE',
          '/items/1/product_id',
        );
      }
      await expectRefused(
        () => placeOrder(h.db, shop.actor(), { customerId: other.customer.id, items: [{ productId: fine, quantity: 1 }] }),
        'CUSTOMER_NOT_FOUND',
      );
      await expectRefused(() => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [] }), 'VALIDATION_FAILED', '/items');
      await expectRefused(
        () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: fine, quantity: 0 }] }),
        'VALIDATION_FAILED',
        '/items/0/quantity',
      );
      await expectRefused(
        () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: fine, quantity: 10_001 }] }),
        'VALIDATION_FAILED',
        '/items/0/quantity',
      );
      await expectRefused(
        () =>
          placeOrder(h.db, shop.actor(), {
            customerId: shop.customer.id,
            items: [
              { productId: fine, quantity: 1 },
              { productId: fine, quantity: 1 },
            ],
          }),
        'VALIDATION_FAILED',
        '/items/1/product_id',
      );
    });

    it('keeps a reference the caller gives, and refuses one the store already has or one out of shape', async () => {
      const oud = await forSale(h, shop, 1_000);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], reference: 'SIM-0001' });
      expect(placed.reference).toBe('SIM-0001');
      for (const reference of ['SIM-0001', '', 'ORD 1', 'X'.repeat(33)]) {
        await expectRefused(
          () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }], reference }),
          'VALIDATION_FAILED',
          '/reference',
        );
      }
      const other = await openShop(h);
      const elsewhere = await forSale(h, other, 1_000);
      expect(
        (await placeOrder(h.db, other.actor(), { customerId: other.customer.id, items: [{ productId: elsewhere, quantity: 1 }], reference: 'SIM-0001' }))
          .reference,
      ).toBe('SIM-0001');
    });

    it('refuses more than the stock (physical, or unsold digital units) with INSUFFICIENT_STOCK and takes nothing, coupon use included', async () => {
      const oud = await forSale(h, shop, 1_000, { quantity: 2 });
      const cards = await digitalForSale(h, shop, 500, ['C-1']);
      await insertCoupon(h.db, shop.storeId, 'TEN');
      await expectRefused(
        () =>
          placeOrder(h.db, shop.actor(), {
            customerId: shop.customer.id,
            items: [
              { productId: cards, quantity: 1 },
              { productId: oud, quantity: 3 },
            ],
            couponCode: 'TEN',
          }),
        'INSUFFICIENT_STOCK',
        '/items/1/quantity',
      );
      await expectRefused(
        () => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: cards, quantity: 2 }] }),
        'INSUFFICIENT_STOCK',
        '/items/0/quantity',
      );
      await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 2 }] });
      expect((await productRow(h.db, oud)).quantity).toBe(0);
    });
  });

  describe('paying', () => {
    it('takes the whole total, assigns one unsold digital unit per unit sold, and writes order.paid with its order.updated', async () => {
      const cards = await digitalForSale(h, shop, 5_000, ['OLD-SOLD', 'C-1', 'C-2', 'C-3']);
      await h.db('digital_units').where({ code: 'OLD-SOLD' }).update({ delivered_at: 1 });
      const oud = await forSale(h, shop, 1_000);
      const placed = await placeOrder(h.db, shop.actor(), {
        customerId: shop.customer.id,
        items: [
          { productId: oud, quantity: 1 },
          { productId: cards, quantity: 2 },
        ],
      });
      h.clock.advance(1000);
      const paid = await payOrder(h.db, shop.actor(), placed.id, MADA);
      expect(paid).toMatchObject({ status: 'processing', payment_status: 'paid', paid_at: h.clock.now() });
      const payments = await h.db('payments').where({ store_id: shop.storeId, order_id: placed.id });
      expect(payments).toEqual([
        expect.objectContaining({ method: 'mada', status: 'paid', amount_halalas: Number(placed.total_halalas), card_brand: 'mada', card_last4: '4821' }),
      ]);
      const [, digitalLine] = (await getOrder(h.db, shop.storeId, placed.id)).items;
      const units = await h.db('digital_units').where({ store_id: shop.storeId, product_id: cards }).orderBy('id');
      expect(units.map((unit) => [unit.code, unit.order_item_id, unit.delivered_at === null ? null : Number(unit.delivered_at)])).toEqual([
        ['OLD-SOLD', null, 1],
        ['C-1', digitalLine?.id, h.clock.now()],
        ['C-2', digitalLine?.id, h.clock.now()],
        ['C-3', null, null],
      ]);
      const events = await eventsNow();
      // The spec: "An `order.updated` event is sent for the same change", with the same order, at the same time.
      expect(events.map((event) => event.type)).toEqual(['order.paid', 'order.updated']);
      for (const event of events) expect(eventSchemaErrors(event)).toEqual([]);
      const order = await getOrder(h.db, shop.storeId, placed.id);
      for (const event of events) expect(event.payload).toMatchObject({ occurred_at: toIso(h.clock.now()), data: { order } });
    });

    it('moves the digital product’s updated_at with its available_units (an inventory sync sees the sale), not its resource_version', async () => {
      const cards = await digitalForSale(h, shop, 5_000, ['C-1', 'C-2', 'C-3']);
      const before = await productRow(h.db, cards);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: cards, quantity: 2 }] });
      // Placing checks the units, takes none: the stock a reader sees is unchanged.
      expect(await productRow(h.db, cards)).toMatchObject({ updated_at: before.updated_at, resource_version: before.resource_version });
      h.clock.advance(1000);
      await payOrder(h.db, shop.actor(), placed.id, MADA);
      expect(await productRow(h.db, cards)).toMatchObject({ updated_at: h.clock.now(), resource_version: before.resource_version });
    });

    it('refuses the payment when too few units are left unsold by then, and delivers none', async () => {
      const cards = await digitalForSale(h, shop, 5_000, ['C-1']);
      const first = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: cards, quantity: 1 }] });
      const second = await placeOrder(h.db, shop.actor(), { customerId: shop.other.id, items: [{ productId: cards, quantity: 1 }] });
      await payOrder(h.db, shop.actor(), first.id, MADA);
      await expectRefused(() => payOrder(h.db, shop.actor(), second.id, { method: 'stc_pay' }), 'INSUFFICIENT_STOCK');
      expect(await h.db('digital_units').where({ product_id: cards, order_id: first.id }).count({ n: '*' })).toEqual([{ n: 1 }]);
    });

    it('pays an order once: a paid, refunded or cancelled order is ORDER_STATE_CONFLICT, and a card method needs its card', async () => {
      const oud = await forSale(h, shop, 1_000);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] });
      await expectRefused(() => payOrder(h.db, shop.actor(), placed.id, { method: 'mada' }), 'VALIDATION_FAILED', '/card');
      await expectRefused(() => payOrder(h.db, shop.actor(), placed.id, { method: 'cod', card: MADA.card }), 'VALIDATION_FAILED', '/card');
      await payOrder(h.db, shop.actor(), placed.id, MADA);
      await expectRefused(() => payOrder(h.db, shop.actor(), placed.id, MADA), 'ORDER_STATE_CONFLICT');
      await expectRefused(() => failPayment(h.db, shop.actor(), placed.id, MADA), 'ORDER_STATE_CONFLICT');
      await refundOrder(h.db, shop.actor(), placed.id);
      await expectRefused(() => payOrder(h.db, shop.actor(), placed.id, MADA), 'ORDER_STATE_CONFLICT');
      const other = await openShop(h);
      await expectRefused(() => payOrder(h.db, other.actor(), placed.id, MADA), 'NOT_FOUND');
    });

    it('records a declined attempt as a failed payment without changing the order or writing an event', async () => {
      const oud = await forSale(h, shop, 1_000);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] });
      h.clock.advance(1000);
      const failed = await failPayment(h.db, shop.actor(), placed.id, { method: 'credit_card', card: { brand: 'visa', last4: '0002' } });
      expect(failed).toMatchObject({ status: 'failed', amount_halalas: Number(placed.total_halalas), order_id: placed.id });
      expect(await h.db('orders').where({ id: placed.id }).first('status', 'payment_status', 'resource_version')).toEqual({
        status: 'pending',
        payment_status: 'unpaid',
        resource_version: 1,
      });
      expect(await eventsNow()).toEqual([]);
      const paid = await payOrder(h.db, shop.actor(), placed.id, MADA);
      expect(paid.payment_status).toBe('paid');
    });
  });

  describe('after payment', () => {
    it('refunds a paid order in full: order and payment refunded, units stay delivered, order.updated', async () => {
      const cards = await digitalForSale(h, shop, 5_000, ['C-1']);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: cards, quantity: 1 }] });
      await payOrder(h.db, shop.actor(), placed.id, MADA);
      h.clock.advance(1000);
      const refunded = await refundOrder(h.db, shop.actor(), placed.id);
      expect(refunded).toMatchObject({ status: 'processing', payment_status: 'refunded' });
      expect(await h.db('payments').where({ order_id: placed.id }).select('status')).toEqual([{ status: 'refunded' }]);
      expect(await h.db('digital_units').where({ product_id: cards }).whereNotNull('delivered_at').count({ n: '*' })).toEqual([{ n: 1 }]);
      expect((await eventsNow()).map((event) => event.type)).toEqual(['order.updated']);
      await expectRefused(() => refundOrder(h.db, shop.actor(), placed.id), 'ORDER_STATE_CONFLICT');
      const unpaid = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: await forSale(h, shop, 100), quantity: 1 }] });
      await expectRefused(() => refundOrder(h.db, shop.actor(), unpaid.id), 'ORDER_STATE_CONFLICT');
    });

    it('fulfils processing → shipped → delivered, one step at a time, with order.updated for each', async () => {
      const oud = await forSale(h, shop, 1_000);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] });
      await expectRefused(() => fulfilOrder(h.db, shop.actor(), placed.id, 'shipped'), 'ORDER_STATE_CONFLICT');
      await payOrder(h.db, shop.actor(), placed.id, MADA);
      await expectRefused(() => fulfilOrder(h.db, shop.actor(), placed.id, 'delivered'), 'ORDER_STATE_CONFLICT');
      h.clock.advance(1000);
      expect((await fulfilOrder(h.db, shop.actor(), placed.id, 'shipped')).status).toBe('shipped');
      expect((await eventsNow()).map((event) => event.type)).toEqual(['order.updated']);
      await expectRefused(() => fulfilOrder(h.db, shop.actor(), placed.id, 'shipped'), 'ORDER_STATE_CONFLICT');
      h.clock.advance(1000);
      expect((await fulfilOrder(h.db, shop.actor(), placed.id, 'delivered')).status).toBe('delivered');
      const [event] = await eventsNow();
      expect(event && eventSchemaErrors(event)).toEqual([]);
      await expectRefused(() => cancelOrder(h.db, shop.actor(), placed.id), 'ORDER_STATE_CONFLICT');
    });

    it('delivers an order with nothing to ship straight from processing', async () => {
      const cards = await digitalForSale(h, shop, 5_000, ['C-1']);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: cards, quantity: 1 }] });
      await payOrder(h.db, shop.actor(), placed.id, MADA);
      expect((await fulfilOrder(h.db, shop.actor(), placed.id, 'delivered')).status).toBe('delivered');
    });
  });

  describe('cancelling', () => {
    it('gives an unpaid order’s stock back, leaves the coupon use counted, and writes order.cancelled with its order.updated', async () => {
      const oud = await forSale(h, shop, 1_000, { quantity: 5 });
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 2 }] });
      expect((await productRow(h.db, oud)).quantity).toBe(3);
      h.clock.advance(1000);
      const cancelled = await cancelOrder(h.db, shop.actor(), placed.id);
      expect(cancelled).toMatchObject({ status: 'cancelled', payment_status: 'unpaid' });
      expect((await productRow(h.db, oud)).quantity).toBe(5);
      const events = await eventsNow();
      expect(events.map((event) => event.type).sort()).toEqual(['inventory.adjusted', 'order.cancelled', 'order.updated', 'product.updated']);
      const [specific, generic] = ['order.cancelled', 'order.updated'].map((type) => events.find((event) => event.type === type)?.payload.data);
      expect(generic).toEqual(specific);
      for (const event of events) expect(eventSchemaErrors(event)).toEqual([]);
      expect(events.find((event) => event.type === 'inventory.adjusted')?.payload.data.adjustment).toMatchObject({ delta: 2, reason: 'correction' });
      await expectRefused(() => cancelOrder(h.db, shop.actor(), placed.id), 'ORDER_STATE_CONFLICT');
      await expectRefused(() => payOrder(h.db, shop.actor(), placed.id, MADA), 'ORDER_STATE_CONFLICT');
    });

    it('refunds a paid order it cancels, gives its physical stock back, and keeps its digital units delivered', async () => {
      const oud = await forSale(h, shop, 1_000, { quantity: 1 });
      const cards = await digitalForSale(h, shop, 5_000, ['C-1']);
      const placed = await placeOrder(h.db, shop.actor(), {
        customerId: shop.customer.id,
        items: [
          { productId: oud, quantity: 1 },
          { productId: cards, quantity: 1 },
        ],
      });
      await payOrder(h.db, shop.actor(), placed.id, MADA);
      const cancelled = await cancelOrder(h.db, shop.actor(), placed.id);
      expect(cancelled).toMatchObject({ status: 'cancelled', payment_status: 'refunded' });
      expect((await productRow(h.db, oud)).quantity).toBe(1);
      expect(await h.db('payments').where({ order_id: placed.id }).select('status')).toEqual([{ status: 'refunded' }]);
      expect(await h.db('digital_units').where({ product_id: cards, order_id: placed.id }).whereNotNull('delivered_at').count({ n: '*' })).toEqual([{ n: 1 }]);
    });

    it('refuses another store’s order as NOT_FOUND', async () => {
      const oud = await forSale(h, shop, 1_000);
      const placed = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] });
      const other = await openShop(h);
      for (const change of [cancelOrder, refundOrder]) {
        await expect(change(h.db, other.actor(), placed.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      }
      await expect(fulfilOrder(h.db, other.actor(), placed.id, 'shipped')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(failPayment(h.db, other.actor(), placed.id, MADA)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(getOrder(h.db, other.storeId, placed.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });
});
