import request from 'supertest';
import { toIso } from '../../../src/core/clock';
import { createCustomer } from '../../../src/domain/storefront/customers/changes';
import { failPayment, payOrder, placeOrder, refundOrder } from '../../../src/domain/storefront/orders/changes';
import { getOrder } from '../../../src/domain/storefront/orders/queries';
import type { PaymentAttempt } from '../../../src/domain/storefront/payments/changes';
import type { Payment } from '../../../src/domain/storefront/payments/row';
import { expectError } from '../../support/auth-steps';
import { tokenWith } from '../../support/catalog-products';
import { testDatabases } from '../../support/databases';
import { createTestStore, type Harness, type StoreFixture, suiteHarness } from '../../support/harness';
import { walkList, withCursor } from '../../support/list-walk';
import { forSale, type Shop, shopperOf } from '../../support/storefront-fixtures';

const MADA: PaymentAttempt = { method: 'mada', card: { brand: 'mada', last4: '4821' } };
const VISA: PaymentAttempt = { method: 'credit_card', card: { brand: 'visa', last4: '0042' } };
const APPLE_PAY: PaymentAttempt = { method: 'apple_pay', card: { brand: 'amex', last4: '1005' } };
const STC_PAY: PaymentAttempt = { method: 'stc_pay' };
const BANK_TRANSFER: PaymentAttempt = { method: 'bank_transfer' };

interface PaymentsShop extends Shop {
  store: StoreFixture;
  /** `payments:read` only. */
  reader: string;
  /** Everything but `payments:read`. */
  withoutScope: string;
  /** A product in stock enough for every order a test places. */
  productId: number;
}

/** A fresh store with a customer, a product and an app that reads payments (and one that may not). */
async function openPaymentsShop(h: Harness): Promise<PaymentsShop> {
  const store = await createTestStore(h, 'Oud House');
  const actor = () => shopperOf(h, store.store.id);
  const customer = await createCustomer(h.db, actor(), { name: 'Noura Al-Harbi' });
  const other = await createCustomer(h.db, actor(), { name: 'Abdullah Al-Qahtani' });
  const shop = { store, storeId: store.store.id, customer, other, actor };
  return {
    ...shop,
    reader: await tokenWith(h, store, ['payments:read']),
    withoutScope: await tokenWith(h, store, ['orders:read', 'products:read']),
    productId: await forSale(h, shop, 34_900, { quantity: 1000 }),
  };
}

const paymentsPath = (storeId: string, id?: number | string) => `/stores/${storeId}/v1/payments${id === undefined ? '' : `/${id}`}`;

type Query = Record<string, string | number>;

describe.each(testDatabases())('payment reads on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  const listCall = (shop: PaymentsShop, query: Query = {}, token = shop.reader) =>
    request(h.app).get(paymentsPath(shop.storeId)).query(query).set('Authorization', `Bearer ${token}`);
  const getCall = (shop: PaymentsShop, id: number | string, token = shop.reader) =>
    request(h.app).get(paymentsPath(shop.storeId, id)).set('Authorization', `Bearer ${token}`);

  /** A pending order of one unit, placed a second after the last step (seconds: the tokens outlive a test). */
  async function placeOne(shop: PaymentsShop): Promise<number> {
    h.clock.advance(1000);
    return (await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: shop.productId, quantity: 1 }] })).id;
  }

  /** Runs `step` a second after the last one. */
  async function later<T>(step: () => Promise<T>): Promise<T> {
    h.clock.advance(1000);
    return step();
  }

  /** The ids one page answers for `query` (status 200 asserted). */
  async function idsOf(shop: PaymentsShop, query: Query): Promise<number[]> {
    const response = await listCall(shop, query);
    expect(response.status).toBe(200);
    return (response.body.data as Payment[]).map((payment) => payment.id);
  }

  /** Every page of `query`, following the cursors: the ids served and the number of pages. */
  async function walk(shop: PaymentsShop, query: Query): Promise<{ ids: number[]; pages: number }> {
    const walk = await walkList<Payment>((cursor) => listCall(shop, withCursor(query, cursor)));
    return { ids: walk.items.map((payment) => payment.id), pages: walk.pages.length };
  }

  describe('a store with paid, failed and refunded payments', () => {
    let shop: PaymentsShop;
    /** Orders: `retried` failed by card and then paid by mada; `refunded` paid by STC Pay and refunded; `apple` paid; `declined` failed once. */
    const orders = { retried: 0, refunded: 0, apple: 0, declined: 0 };
    /** Their payments, in the order they were made. */
    const payments = { retriedFailed: 0, retriedPaid: 0, refunded: 0, apple: 0, declined: 0 };
    const times = { retriedFailed: 0, refunded: 0, refundedAt: 0 };

    beforeAll(async () => {
      shop = await openPaymentsShop(h);
      orders.retried = await placeOne(shop);
      orders.refunded = await placeOne(shop);
      orders.apple = await placeOne(shop);
      orders.declined = await placeOne(shop);
      payments.retriedFailed = (await later(() => failPayment(h.db, shop.actor(), orders.retried, VISA))).id;
      times.retriedFailed = h.clock.now();
      await later(() => payOrder(h.db, shop.actor(), orders.retried, MADA));
      await later(() => payOrder(h.db, shop.actor(), orders.refunded, STC_PAY));
      times.refunded = h.clock.now();
      await later(() => payOrder(h.db, shop.actor(), orders.apple, APPLE_PAY));
      payments.declined = (await later(() => failPayment(h.db, shop.actor(), orders.declined, BANK_TRANSFER))).id;
      await later(() => refundOrder(h.db, shop.actor(), orders.refunded));
      times.refundedAt = h.clock.now();
      // The paid payments' ids, read back through the list filtered by order: the domain functions return the orders.
      const onlyPaymentOf = async (orderId: number, status: string) => {
        const [id, ...rest] = await idsOf(shop, { order_id: String(orderId), status });
        expect(rest).toEqual([]);
        return id ?? 0;
      };
      payments.retriedPaid = await onlyPaymentOf(orders.retried, 'paid');
      payments.refunded = await onlyPaymentOf(orders.refunded, 'refunded');
      payments.apple = await onlyPaymentOf(orders.apple, 'paid');
    });

    const allIds = () => [payments.retriedFailed, payments.retriedPaid, payments.refunded, payments.apple, payments.declined];
    const totalOf = async (orderId: number) => (await getOrder(h.db, shop.storeId, orderId)).amounts.total;

    it('lists every payment by ascending id, each as payments.get answers it', async () => {
      const response = await listCall(shop);
      expect(response.status).toBe(200);
      expect(response.body.meta).toEqual({
        request_id: response.headers['x-request-id'],
        has_more: false,
        limit: 25,
        next_cursor: null,
        consistency: 'live_keyset',
      });
      const listed = response.body.data as Payment[];
      expect(listed.map((payment) => payment.id)).toEqual([...allIds()].sort((a, b) => a - b));
      for (const payment of listed) {
        const read = await getCall(shop, payment.id);
        expect(read.status).toBe(200);
        expect(read.body.data).toEqual(payment);
      }
    });

    it('reads back a declined card attempt as failed, for the whole total, with its card, at the time of the attempt', async () => {
      const response = await getCall(shop, payments.retriedFailed);
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({
        id: payments.retriedFailed,
        order_id: orders.retried,
        method: 'credit_card',
        status: 'failed',
        amount: await totalOf(orders.retried),
        card: { brand: 'visa', last4: '0042' },
        created_at: toIso(times.retriedFailed),
        updated_at: toIso(times.retriedFailed),
      });
      expect(response.body.meta).toEqual({ request_id: response.headers['x-request-id'] });
      expect(response.body.data.amount).toBe('435.85'); // 349.00 + 30.00 shipping + 15 % VAT on both
    });

    it('reads back a refunded payment as refunded, keeping its amount, method and time, updated at the refund; a method without a card has card null', async () => {
      const response = await getCall(shop, payments.refunded);
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({
        id: payments.refunded,
        order_id: orders.refunded,
        method: 'stc_pay',
        status: 'refunded',
        amount: await totalOf(orders.refunded),
        card: null,
        created_at: toIso(times.refunded),
        updated_at: toIso(times.refundedAt),
      });
    });

    it.each([
      ['status=paid', { status: 'paid' }, () => [payments.retriedPaid, payments.apple]],
      ['status=failed', { status: 'failed' }, () => [payments.retriedFailed, payments.declined]],
      ['status=refunded', { status: 'refunded' }, () => [payments.refunded]],
      ['status=pending (none is)', { status: 'pending' }, () => []],
      ['method=mada', { method: 'mada' }, () => [payments.retriedPaid]],
      ['method=credit_card', { method: 'credit_card' }, () => [payments.retriedFailed]],
      ['method=cod (none is)', { method: 'cod' }, () => []],
    ])('filters by %s', async (_name, query: Query, expected: () => number[]) => {
      expect(await idsOf(shop, query)).toEqual(expected());
    });

    it('filters by order_id: every attempt of that order, failed ones too', async () => {
      expect(await idsOf(shop, { order_id: String(orders.retried) })).toEqual([payments.retriedFailed, payments.retriedPaid]);
      expect(await idsOf(shop, { order_id: String(orders.declined) })).toEqual([payments.declined]);
    });

    it('combines filters with AND', async () => {
      expect(await idsOf(shop, { order_id: String(orders.retried), status: 'failed' })).toEqual([payments.retriedFailed]);
      expect(await idsOf(shop, { order_id: String(orders.retried), method: 'mada', status: 'paid' })).toEqual([payments.retriedPaid]);
      expect(await idsOf(shop, { status: 'paid', method: 'apple_pay' })).toEqual([payments.apple]);
      expect(await idsOf(shop, { status: 'paid', method: 'credit_card' })).toEqual([]);
      expect(await idsOf(shop, { order_id: String(orders.apple), status: 'failed' })).toEqual([]);
    });

    it("gives an empty page for an order_id with no payments: a pending order, another store's order, an id beyond the id range", async () => {
      const unpaid = await placeOne(shop);
      const other = await openPaymentsShop(h);
      const othersOrder = await placeOne(other);
      await later(() => payOrder(h.db, other.actor(), othersOrder, MADA));
      for (const orderId of [String(unpaid), String(othersOrder), '2147483648', '999999999999999']) {
        const response = await listCall(shop, { order_id: orderId });
        expect(response.status).toBe(200);
        expect(response.body.data).toEqual([]);
        expect(response.body.meta).toMatchObject({ has_more: false, next_cursor: null });
      }
    });

    it.each([
      ['an unknown status', { status: 'declined' }],
      ['a status in capitals', { status: 'PAID' }],
      ['an unknown method', { method: 'visa' }],
      ['an empty method', { method: '' }],
      ['order_id 0', { order_id: '0' }],
      ['an order_id with a leading zero', { order_id: '01' }],
      ['a negative order_id', { order_id: '-1' }],
      ['an order_id that is not a number', { order_id: 'abc' }],
      ['an order_id of 16 digits', { order_id: '1234567890123456' }],
      ['a bad value beside a good one', { status: 'paid', method: 'cheque' }],
    ])('is 400 INVALID_FILTER for %s', async (_name, query: Query) => {
      const response = await listCall(shop, query);
      expectError(response, 400, 'INVALID_FILTER');
    });

    it('is 422 UNKNOWN_FIELD for a filter it does not take', async () => {
      expectError(await listCall(shop, { customer_id: String(shop.customer.id) }), 422, 'UNKNOWN_FIELD');
    });

    it('is 400 INVALID_CURSOR when a cursor comes back with other filters, or to another store', async () => {
      const first = await listCall(shop, { limit: 1, status: 'failed' });
      expect(first.body.meta).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
      const cursor = first.body.meta.next_cursor as string;
      const otherFilters: Query[] = [
        {},
        { status: 'paid' },
        { status: 'failed', method: 'bank_transfer' },
        { status: 'failed', order_id: String(orders.declined) },
      ];
      for (const query of otherFilters) expectError(await listCall(shop, { ...query, cursor }), 400, 'INVALID_CURSOR');
      const other = await openPaymentsShop(h);
      expectError(await listCall(other, { status: 'failed', cursor }), 400, 'INVALID_CURSOR');
      // The same filters take it, whatever the limit.
      const next = await listCall(shop, { status: 'failed', limit: 5, cursor });
      expect((next.body.data as Payment[]).map((payment) => payment.id)).toEqual([payments.declined]);
    });

    it("is 404 NOT_FOUND for another store's payment, an id no payment has, and ids beyond the id range", async () => {
      const other = await openPaymentsShop(h);
      const othersOrder = await placeOne(other);
      await later(() => payOrder(h.db, other.actor(), othersOrder, MADA));
      const [othersPayment] = await idsOf(other, {});
      expect(othersPayment).toBeDefined();
      for (const id of [othersPayment ?? 0, 2_147_483_647, '2147483648', '999999999999999']) {
        expectError(await getCall(shop, id), 404, 'NOT_FOUND');
      }
      expect(await idsOf(shop, {})).not.toContain(othersPayment);
    });

    it("is 404 STORE_NOT_FOUND for another store's token on this store's path", async () => {
      const other = await openPaymentsShop(h);
      expectError(await listCall(shop, {}, other.reader), 404, 'STORE_NOT_FOUND');
      expectError(await getCall(shop, payments.apple, other.reader), 404, 'STORE_NOT_FOUND');
    });

    it('needs payments:read (403 INSUFFICIENT_SCOPE otherwise)', async () => {
      for (const response of [await listCall(shop, {}, shop.withoutScope), await getCall(shop, payments.apple, shop.withoutScope)]) {
        expectError(response, 403, 'INSUFFICIENT_SCOPE');
        expect(response.headers['www-authenticate']).toContain('payments:read');
      }
    });
  });

  describe('more payments than a page', () => {
    let shop: PaymentsShop;
    const failedIds: number[] = [];

    beforeAll(async () => {
      shop = await openPaymentsShop(h);
      // 30 orders, each paid; every third declined once first: 40 payments, 10 of them failed.
      for (let index = 0; index < 30; index += 1) {
        const orderId = await placeOne(shop);
        if (index % 3 === 0) failedIds.push((await failPayment(h.db, shop.actor(), orderId, STC_PAY)).id);
        await payOrder(h.db, shop.actor(), orderId, index % 2 === 0 ? MADA : BANK_TRANSFER);
      }
    }, 120_000);

    it('walks every payment once, in id order, 25 to a page by default', async () => {
      const { ids, pages } = await walk(shop, {});
      expect(ids).toHaveLength(40);
      expect(new Set(ids).size).toBe(40);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(pages).toBe(2);
    });

    it('walks a filter in small pages, serving only its matches', async () => {
      expect(await walk(shop, { status: 'failed', limit: 3 })).toEqual({ ids: failedIds, pages: 4 });
      const mada = await walk(shop, { method: 'mada', status: 'paid', limit: 4 });
      expect(mada.ids).toHaveLength(15);
      expect(mada.pages).toBe(4);
      for (const id of mada.ids.slice(0, 3)) expect((await getCall(shop, id)).body.data).toMatchObject({ method: 'mada', status: 'paid' });
    });
  });
});
