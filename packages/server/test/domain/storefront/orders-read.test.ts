import request from 'supertest';
import { toIso } from '../../../src/core/clock';
import { cancelOrder, fulfilOrder, payOrder, placeOrder, refundOrder } from '../../../src/domain/storefront/orders/changes';
import { expectError } from '../../support/auth-steps';
import { HUGE_ID, MALFORMED_IDS, tokenWithScopes } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { walkList, withCursor } from '../../support/list-walk';
import { digitalForSale, forSale, openShop, type Shop } from '../../support/storefront-fixtures';

const MADA = { method: 'mada' as const, card: { brand: 'mada' as const, last4: '4821' } };
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Riyadh's offset, to write the same instants as a store's app would. */
const RIYADH = 3 * HOUR;

type Query = Record<string, string | number>;

interface OrderBody {
  id: number;
  status: string;
  payment_status: string;
  customer: Record<string, unknown>;
  items: Array<{ id: number; product_id: number; product_kind: string; quantity: number }>;
  amounts: Record<string, string>;
  created_at: string;
}
interface ListBody {
  data: OrderBody[];
  meta: { has_more: boolean; limit: number; next_cursor: string | null };
}
interface DigitalItemBody {
  id: number;
  order_id: number;
  order_item_id: number;
  product_id: number;
  kind: string;
  code: string | null;
  file_url: string | null;
  delivered_at: string;
}

/** An instant as `+03:00` local time, as Riyadh writes it (`2026-11-22T12:00:00.000+03:00`). */
const inRiyadh = (instant: number) => toIso(instant + RIYADH).replace('Z', '+03:00');

describe.each(testDatabases())('orders read through HTTP on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });
  const ordersPath = (shop: Shop, suffix = '') => `/stores/${shop.storeId}/v1/orders${suffix}`;
  const get = (path: string, token: string, query: Query = {}) => request(h.app).get(path).query(query).set('Authorization', `Bearer ${token}`);

  /** One store's orders, each placed a minute after the one before, in every state a shopper can bring one to. */
  let shop: Shop;
  let other: Shop;
  const tokens = { reader: '', contacts: '', digital: '', unrelated: '', customersOnly: '', otherStore: '' };
  const placedAt: Record<string, number> = {};
  const ids: Record<string, number> = {};
  /** Expected states, written down here, not read from the code under test. */
  const states: Record<string, [status: string, paymentStatus: string]> = {
    pending: ['pending', 'unpaid'],
    paid: ['processing', 'paid'],
    cancelledUnpaid: ['cancelled', 'unpaid'],
    refunded: ['processing', 'refunded'],
    shipped: ['shipped', 'paid'],
    cancelledPaid: ['cancelled', 'refunded'],
    delivered: ['delivered', 'paid'],
  };
  const names = Object.keys(states);
  let oud: number;
  let giftCard: number;
  let ebook: number;
  let otherOrder: number;

  beforeAll(async () => {
    shop = await openShop(h);
    other = await openShop(h);
    oud = await forSale(h, shop, 34_900, { quantity: 100 });
    giftCard = await digitalForSale(h, shop, 10_000, ['GC-1', 'GC-2', 'GC-3', 'GC-4', 'GC-5', 'GC-6', 'GC-7', 'GC-8', 'GC-9']);
    ebook = await digitalForSale(h, shop, 5_000, ['EB-1', 'EB-2', 'EB-3']);

    for (const [index, name] of names.entries()) {
      h.clock.advance(MINUTE);
      // Every other order is the second customer's, who gave no e-mail or mobile.
      const customerId = index % 2 === 0 ? shop.customer.id : shop.other.id;
      const placed = await placeOrder(h.db, shop.actor(), { customerId, items: [{ productId: oud, quantity: 1 }] });
      placedAt[name] = h.clock.now();
      ids[name] = placed.id;
    }
    h.clock.advance(MINUTE);
    const act = (name: string) => ids[name] as number;
    await payOrder(h.db, shop.actor(), act('paid'), MADA);
    await cancelOrder(h.db, shop.actor(), act('cancelledUnpaid'));
    await payOrder(h.db, shop.actor(), act('refunded'), MADA);
    await refundOrder(h.db, shop.actor(), act('refunded'));
    await payOrder(h.db, shop.actor(), act('shipped'), MADA);
    await fulfilOrder(h.db, shop.actor(), act('shipped'), 'shipped');
    await payOrder(h.db, shop.actor(), act('cancelledPaid'), MADA);
    await cancelOrder(h.db, shop.actor(), act('cancelledPaid'));
    await payOrder(h.db, shop.actor(), act('delivered'), MADA);
    await fulfilOrder(h.db, shop.actor(), act('delivered'), 'shipped');
    await fulfilOrder(h.db, shop.actor(), act('delivered'), 'delivered');

    const otherProduct = await forSale(h, other, 1_000);
    otherOrder = (await placeOrder(h.db, other.actor(), { customerId: other.customer.id, items: [{ productId: otherProduct, quantity: 1 }] })).id;
    // Issued after the orders' instants, so they are fresh for every test (a token lives 15 minutes).
    tokens.reader = await tokenWithScopes(h, shop.store, ['orders:read']);
    tokens.contacts = await tokenWithScopes(h, shop.store, ['orders:read', 'customers:read']);
    tokens.digital = await tokenWithScopes(h, shop.store, ['orders:read', 'orders.digital:read']);
    tokens.unrelated = await tokenWithScopes(h, shop.store, ['products:read']);
    tokens.customersOnly = await tokenWithScopes(h, shop.store, ['customers:read']);
    tokens.otherStore = await tokenWithScopes(h, other.store, ['orders:read', 'orders.digital:read']);
  });

  /** Every order of the list for `query`, walking its pages; the number of pages served. */
  async function walk(token: string, query: Query): Promise<{ ids: number[]; pages: number }> {
    const walk = await walkList<{ id: number }>((cursor) => get(ordersPath(shop), token, withCursor(query, cursor)));
    return { ids: walk.items.map((order) => order.id), pages: walk.pages.length };
  }

  const idsOf = (...wanted: string[]) => wanted.map((name) => ids[name] as number).sort((a, b) => a - b);
  const namesWhere = (keep: (name: string, state: [string, string]) => boolean) => names.filter((name) => keep(name, states[name] as [string, string]));
  const instantOf = (name: string) => placedAt[name] as number;

  describe('orders.list', () => {
    it('lists every order of the store by ascending id, with lines, amounts and customer, and none of another store', async () => {
      const response = await get(ordersPath(shop), tokens.reader);
      expect(response.status).toBe(200);
      const body = response.body as ListBody;
      expect(body.data.map((order) => order.id)).toEqual(idsOf(...names));
      expect(body.data.map((order) => order.id)).not.toContain(otherOrder);
      expect(body.meta).toMatchObject({ has_more: false, limit: 25, next_cursor: null });
      const first = body.data[0] as OrderBody;
      expect(first).toMatchObject({
        status: 'pending',
        payment_status: 'unpaid',
        customer: { id: shop.customer.id, name: shop.customer.name },
        items: [{ product_id: oud, quantity: 1, product_kind: 'physical' }],
        created_at: toIso(instantOf('pending')),
      });
      // 349.00 + 15 % VAT on it and on shipping: the domain's sums, here only checked to be there.
      expect(Object.keys(first.amounts).sort()).toEqual(['discount', 'shipping', 'subtotal', 'tax', 'total']);
      expect(first.amounts.subtotal).toBe('349.00');
    });

    it.each(['pending', 'processing', 'shipped', 'delivered', 'cancelled'])('status=%s lists only orders with that status', async (status) => {
      const expected = idsOf(...namesWhere((_, [orderStatus]) => orderStatus === status));
      expect((await walk(tokens.reader, { status })).ids).toEqual(expected);
    });

    it.each(['unpaid', 'paid', 'refunded'])('payment_status=%s lists only orders with that payment status', async (paymentStatus) => {
      const expected = idsOf(...namesWhere((_, [, orderPayment]) => orderPayment === paymentStatus));
      expect(expected.length).toBeGreaterThan(0);
      expect((await walk(tokens.reader, { payment_status: paymentStatus })).ids).toEqual(expected);
    });

    it('combines status and payment status with AND', async () => {
      expect((await walk(tokens.reader, { status: 'processing', payment_status: 'refunded' })).ids).toEqual(idsOf('refunded'));
      expect((await walk(tokens.reader, { status: 'cancelled', payment_status: 'refunded' })).ids).toEqual(idsOf('cancelledPaid'));
      expect((await walk(tokens.reader, { status: 'pending', payment_status: 'paid' })).ids).toEqual([]);
    });

    it('takes the created range inclusively at both ends, in any offset', async () => {
      const from = instantOf('paid');
      const to = instantOf('shipped');
      const inRange = idsOf('paid', 'cancelledUnpaid', 'refunded', 'shipped');
      expect((await walk(tokens.reader, { created_from: toIso(from), created_to: toIso(to) })).ids).toEqual(inRange);
      expect((await walk(tokens.reader, { created_from: inRiyadh(from), created_to: inRiyadh(to) })).ids).toEqual(inRange);
      // One millisecond inside each edge leaves the edge orders out.
      expect((await walk(tokens.reader, { created_from: toIso(from + 1), created_to: toIso(to - 1) })).ids).toEqual(idsOf('cancelledUnpaid', 'refunded'));
      // A range of one instant holds the order placed at it.
      expect((await walk(tokens.reader, { created_from: toIso(from), created_to: toIso(from) })).ids).toEqual(idsOf('paid'));
    });

    it('takes either end of the created range alone', async () => {
      expect((await walk(tokens.reader, { created_from: toIso(instantOf('shipped')) })).ids).toEqual(idsOf('shipped', 'cancelledPaid', 'delivered'));
      expect((await walk(tokens.reader, { created_to: toIso(instantOf('paid')) })).ids).toEqual(idsOf('pending', 'paid'));
      expect((await walk(tokens.reader, { created_to: toIso(instantOf('pending') - 1) })).ids).toEqual([]);
    });

    it('combines every filter with AND', async () => {
      const query = { status: 'cancelled', payment_status: 'unpaid', created_from: toIso(instantOf('pending')), created_to: toIso(instantOf('delivered')) };
      expect((await walk(tokens.reader, query)).ids).toEqual(idsOf('cancelledUnpaid'));
      expect((await walk(tokens.reader, { ...query, created_to: toIso(instantOf('paid')) })).ids).toEqual([]);
    });

    it.each<[string, Query]>([
      ['an unknown status', { status: 'lost' }],
      ['an unknown payment status', { payment_status: 'failed' }],
      ['a created_from that is no date-time', { created_from: 'yesterday' }],
      ['a created_to that is a bare date', { created_to: '2026-11-22' }],
      ['a day that does not exist', { created_from: '2026-02-30T00:00:00Z' }],
      ['an hour that does not exist', { created_to: '2026-11-22T24:00:00Z' }],
      ['created_from after created_to', { created_from: '2026-11-22T12:00:00Z', created_to: '2026-11-22T11:59:59.999Z' }],
      ['created_from after created_to, written in other offsets', { created_from: '2026-11-22T15:00:00+03:00', created_to: '2026-11-22T11:00:00Z' }],
    ])('is 400 INVALID_FILTER for %s', async (_why, query) => {
      expectError(await get(ordersPath(shop), tokens.reader, query), 400, 'INVALID_FILTER');
    });

    it('is 422 UNKNOWN_FIELD for a filter the operation does not know', async () => {
      expectError(await get(ordersPath(shop), tokens.reader, { customer_id: shop.customer.id }), 422, 'UNKNOWN_FIELD');
    });

    it.each([1, 2, 3])('walks more orders than a page (limit %i): each once, in id order', async (limit) => {
      const all = await walk(tokens.reader, { limit });
      expect(all.ids).toEqual(idsOf(...names));
      expect(all.pages).toBe(Math.ceil(names.length / limit));
      const paid = idsOf(...namesWhere((_, [, payment]) => payment === 'paid'));
      const filtered = await walk(tokens.reader, { limit, payment_status: 'paid' });
      expect(filtered.ids).toEqual(paid);
      expect(filtered.pages).toBe(Math.ceil(paid.length / limit));
    });

    it('is 400 INVALID_CURSOR for a cursor with other filters, of another list, or of another store', async () => {
      const first = (await get(ordersPath(shop), tokens.reader, { limit: 1, payment_status: 'paid' })).body as ListBody;
      const cursor = first.meta.next_cursor as string;
      expect(cursor).toEqual(expect.any(String));
      const otherFilters: Query[] = [
        {},
        { payment_status: 'unpaid' },
        { payment_status: 'paid', status: 'processing' },
        { payment_status: 'paid', created_to: toIso(instantOf('delivered')) },
      ];
      for (const query of otherFilters) {
        expectError(await get(ordersPath(shop), tokens.reader, { ...query, limit: 1, cursor }), 400, 'INVALID_CURSOR');
      }
      expectError(await get(ordersPath(other), tokens.otherStore, { limit: 1, payment_status: 'paid', cursor }), 400, 'INVALID_CURSOR');
      const productsToken = await tokenWithScopes(h, shop.store, ['products:read']);
      expectError(await get(`/stores/${shop.storeId}/v1/products`, productsToken, { limit: 1, cursor }), 400, 'INVALID_CURSOR');
      // The same cursor with its own filters goes on.
      expect((await get(ordersPath(shop), tokens.reader, { limit: 1, payment_status: 'paid', cursor })).status).toBe(200);
    });

    it('answers a bad filter before it looks at the cursor', async () => {
      expectError(await get(ordersPath(shop), tokens.reader, { status: 'lost', cursor: 'not-a-cursor' }), 400, 'INVALID_FILTER');
    });
  });

  describe('orders.get', () => {
    it('answers the order with its lines and amounts', async () => {
      const response = await get(ordersPath(shop, `/${ids.refunded}`), tokens.reader);
      expect(response.status).toBe(200);
      expect(response.body.data).toMatchObject({
        id: ids.refunded,
        status: 'processing',
        payment_status: 'refunded',
        items: [{ product_id: oud, quantity: 1, unit_price: '349.00', total: '349.00', product_kind: 'physical' }],
        created_at: toIso(instantOf('refunded')),
      });
      expect(response.body.data.paid_at).toEqual(expect.any(String));
    });

    it('answers what orders.list answers for the same order', async () => {
      const listed = ((await get(ordersPath(shop), tokens.contacts)).body as ListBody).data;
      for (const order of listed) expect((await get(ordersPath(shop, `/${order.id}`), tokens.contacts)).body.data).toEqual(order);
    });

    it("is 404 NOT_FOUND for another store's order and for ids no order can have", async () => {
      expectError(await get(ordersPath(shop, `/${otherOrder}`), tokens.reader), 404, 'NOT_FOUND');
      expectError(await get(ordersPath(shop, `/${HUGE_ID}`), tokens.reader), 404, 'NOT_FOUND');
      expectError(await get(ordersPath(shop, `/${Math.max(...Object.values(ids), otherOrder) + 1000}`), tokens.reader), 404, 'NOT_FOUND');
      // The other store's token does not reach this store at all.
      expectError(await get(ordersPath(shop, `/${ids.paid}`), tokens.otherStore), 404, 'STORE_NOT_FOUND');
    });

    it.each(MALFORMED_IDS)('is 400 for the malformed id %s', async (id) => {
      expect((await get(ordersPath(shop, `/${id}`), tokens.reader)).status).toBe(400);
    });
  });

  describe('scopes and contact details', () => {
    it.each<[string, keyof typeof tokens]>([
      ['products:read', 'unrelated'],
      ['customers:read alone', 'customersOnly'],
    ])('is 403 without orders:read (%s) on the list and on one order', async (_scopes, token) => {
      expectError(await get(ordersPath(shop), tokens[token]), 403, 'INSUFFICIENT_SCOPE');
      expectError(await get(ordersPath(shop, `/${ids.paid}`), tokens[token]), 403, 'INSUFFICIENT_SCOPE');
    });

    it('shows e-mail and mobile only with customers:read, and only those the shopper gave', async () => {
      const contactsOf = async (token: string) => {
        const listed = ((await get(ordersPath(shop), token)).body as ListBody).data.map((order) => order.customer);
        const one = (await get(ordersPath(shop, `/${ids.pending}`), token)).body.data.customer as Record<string, unknown>;
        return { listed, one };
      };
      const bare = await contactsOf(tokens.reader);
      expect(bare.one).toEqual({ id: shop.customer.id, name: 'Noura Al-Harbi' });
      for (const customer of bare.listed) expect(Object.keys(customer).sort()).toEqual(['id', 'name']);

      const full = await contactsOf(tokens.contacts);
      expect(full.one).toEqual({ id: shop.customer.id, name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' });
      expect(full.listed).toContainEqual({ id: shop.other.id, name: shop.other.name });
      expect(full.listed.filter((customer) => 'email' in customer)).toHaveLength(Math.ceil(names.length / 2));
    });
  });

  describe('orders.digital_items', () => {
    let mixed: number;
    let sameProducts: number;
    let unpaid: number;
    let physicalOnly: number;

    beforeAll(async () => {
      h.clock.advance(MINUTE);
      const place = (items: Array<{ productId: number; quantity: number }>) => placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items });
      mixed = (
        await place([
          { productId: giftCard, quantity: 2 },
          { productId: oud, quantity: 1 },
          { productId: ebook, quantity: 1 },
        ])
      ).id;
      sameProducts = (
        await place([
          { productId: giftCard, quantity: 3 },
          { productId: ebook, quantity: 1 },
        ])
      ).id;
      unpaid = (await place([{ productId: giftCard, quantity: 1 }])).id;
      physicalOnly = (await place([{ productId: oud, quantity: 2 }])).id;
      h.clock.advance(1000);
      await payOrder(h.db, shop.actor(), mixed, MADA);
      h.clock.advance(1000);
      await payOrder(h.db, shop.actor(), sameProducts, MADA);
      await refundOrder(h.db, shop.actor(), sameProducts);
      await payOrder(h.db, shop.actor(), physicalOnly, MADA);
    });

    const itemsOf = async (orderId: number, token = tokens.digital) => {
      const response = await get(ordersPath(shop, `/${orderId}/digital-items`), token);
      expect(response.status).toBe(200);
      return response.body.data as DigitalItemBody[];
    };
    const linesOf = async (orderId: number) => ((await get(ordersPath(shop, `/${orderId}`), tokens.reader)).body.data as OrderBody).items;

    it("lists the codes delivered with the order's digital lines only, one per unit, by id", async () => {
      const lines = await linesOf(mixed);
      const [cardLine, , ebookLine] = lines;
      const items = await itemsOf(mixed);
      expect(items).toEqual([
        {
          id: expect.any(Number),
          order_id: mixed,
          order_item_id: cardLine?.id,
          product_id: giftCard,
          kind: 'code',
          code: 'GC-1',
          file_url: null,
          delivered_at: toIso(h.clock.now() - 1000),
        },
        {
          id: expect.any(Number),
          order_id: mixed,
          order_item_id: cardLine?.id,
          product_id: giftCard,
          kind: 'code',
          code: 'GC-2',
          file_url: null,
          delivered_at: toIso(h.clock.now() - 1000),
        },
        {
          id: expect.any(Number),
          order_id: mixed,
          order_item_id: ebookLine?.id,
          product_id: ebook,
          kind: 'code',
          code: 'EB-1',
          file_url: null,
          delivered_at: toIso(h.clock.now() - 1000),
        },
      ]);
      expect(items.map((item) => item.id)).toEqual([...items.map((item) => item.id)].sort((a, b) => a - b));
    });

    it("lists none of another order's units of the same products, and keeps a refunded order's", async () => {
      const items = await itemsOf(sameProducts);
      expect(items.map((item) => item.code)).toEqual(['GC-3', 'GC-4', 'GC-5', 'EB-2']);
      expect(items.every((item) => item.order_id === sameProducts)).toBe(true);
      const lineIds = (await linesOf(sameProducts)).map((line) => line.id);
      expect(items.every((item) => lineIds.includes(item.order_item_id))).toBe(true);
    });

    it('is empty for an order that delivered nothing: unpaid, or with no digital line', async () => {
      expect(await itemsOf(unpaid)).toEqual([]);
      expect(await itemsOf(physicalOnly)).toEqual([]);
      expect(await itemsOf(ids.pending as number)).toEqual([]);
    });

    it('is 403 without orders.digital:read, even with orders:read and customers:read', async () => {
      for (const token of [tokens.reader, tokens.contacts, tokens.unrelated]) {
        expectError(await get(ordersPath(shop, `/${mixed}/digital-items`), token), 403, 'INSUFFICIENT_SCOPE');
      }
    });

    it("is 404 NOT_FOUND for another store's order and for ids no order can have", async () => {
      expectError(await get(ordersPath(shop, `/${otherOrder}/digital-items`), tokens.digital), 404, 'NOT_FOUND');
      expectError(await get(ordersPath(shop, `/${HUGE_ID}/digital-items`), tokens.digital), 404, 'NOT_FOUND');
      expectError(await get(ordersPath(other, `/${mixed}/digital-items`), tokens.otherStore), 404, 'NOT_FOUND');
    });
  });
});
