import { abandonCart, recoverCart } from '../../../src/domain/storefront/carts/changes';
import { cartOf } from '../../../src/domain/storefront/carts/queries';
import { placeOrder } from '../../../src/domain/storefront/orders/changes';
import { getOrder } from '../../../src/domain/storefront/orders/queries';
import { writeReview } from '../../../src/domain/storefront/reviews/changes';
import { productRow } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { deliveredOrder, eventSchemaErrors, eventsOf, forSale, openShop, type Shop } from '../../support/storefront-fixtures';

describe.each(testDatabases())('abandoned carts and reviews on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let shop: Shop;

  beforeEach(async () => {
    h.clock.advance(60_000);
    shop = await openShop(h);
  });

  const eventsNow = async () => (await eventsOf(h.db, shop.storeId)).filter((event) => Date.parse(event.payload.occurred_at) === h.clock.now());
  const countOf = async (table: string) => Number((await h.db(table).where({ store_id: shop.storeId }).count({ n: '*' }))[0]?.n);

  describe('abandoned carts', () => {
    it('keeps the lines at the prices seen, the subtotal and the total with VAT, takes no stock, and writes abandoned_cart.created', async () => {
      const oud = await forSale(h, shop, 34_900, { name: 'Royal Oud', quantity: 3 });
      h.clock.advance(1000);
      const cart = await abandonCart(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] });
      const view = await cartOf(h.db, cart, h.clock.now() + 185 * 60_000);
      expect(view).toMatchObject({
        customer: { id: shop.customer.id, name: 'Noura Al-Harbi' },
        items: [{ product_id: oud, name: 'Royal Oud', quantity: 1, unit_price: '349.00', total: '349.00' }],
        subtotal: '349.00',
        total: '401.35',
        age_minutes: 185,
        recovered_order_id: null,
      });
      expect(view.checkout_url).toMatch(/^https:\/\/store-[^/]+\.example\.com\/checkout\/recover\?t=[A-Za-z0-9_-]{16}$/);
      expect((await productRow(h.db, oud)).quantity).toBe(3);
      const events = await eventsNow();
      expect(events.map((event) => event.type)).toEqual(['abandoned_cart.created']);
      expect(eventSchemaErrors(events[0] as (typeof events)[0])).toEqual([]);
      expect(events[0]?.payload.data).toEqual({ cart: await cartOf(h.db, cart, h.clock.now()) });
    });

    it('refuses a cart of products not for sale or of another store’s customer, and writes nothing', async () => {
      const other = await openShop(h);
      const foreign = await forSale(h, other, 1_000);
      const oud = await forSale(h, shop, 1_000);
      await expect(abandonCart(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: foreign, quantity: 1 }] })).rejects.toMatchObject({
        code: 'PRODUCT_UNAVAILABLE',
      });
      await expect(abandonCart(h.db, shop.actor(), { customerId: other.customer.id, items: [{ productId: oud, quantity: 1 }] })).rejects.toMatchObject({
        code: 'CUSTOMER_NOT_FOUND',
      });
      expect([await countOf('abandoned_carts'), await countOf('abandoned_cart_items'), await countOf('outbox_events')]).toEqual([0, 0, 0]);
    });

    it('recovers into an order of the same customer, placed after the cart at today’s price, once', async () => {
      const oud = await forSale(h, shop, 1_000, { quantity: 5 });
      const cart = await abandonCart(h.db, shop.actor(), { customerId: shop.other.id, items: [{ productId: oud, quantity: 2 }] });
      await h.db('products').where({ id: oud }).update({ price_halalas: 1_200 });
      h.clock.advance(3_600_000);
      const order = await recoverCart(h.db, shop.actor(), cart.id);
      const view = await getOrder(h.db, shop.storeId, order.id);
      expect(view).toMatchObject({ customer: { id: shop.other.id }, items: [{ product_id: oud, quantity: 2, unit_price: '12.00' }] });
      expect(Date.parse(view.created_at)).toBeGreaterThan(Number(cart.created_at));
      expect((await productRow(h.db, oud)).quantity).toBe(3);
      expect(await h.db('abandoned_carts').where({ id: cart.id }).first('recovered_order_id', 'resource_version')).toEqual({
        recovered_order_id: order.id,
        resource_version: 2,
      });
      expect((await eventsNow()).map((event) => event.type).sort()).toEqual(['inventory.adjusted', 'order.created', 'product.updated']);
      const ordersBefore = await countOf('orders');
      await expect(recoverCart(h.db, shop.actor(), cart.id)).rejects.toMatchObject({ code: 'CART_ALREADY_RECOVERED' });
      expect(await countOf('orders')).toBe(ordersBefore);
    });

    it('leaves the cart unrecovered when its order is refused (no stock), and another store cannot recover it', async () => {
      const oud = await forSale(h, shop, 1_000, { quantity: 1 });
      const cart = await abandonCart(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] });
      await placeOrder(h.db, shop.actor(), { customerId: shop.other.id, items: [{ productId: oud, quantity: 1 }] });
      await expect(recoverCart(h.db, shop.actor(), cart.id)).rejects.toMatchObject({ code: 'INSUFFICIENT_STOCK' });
      expect(await h.db('abandoned_carts').where({ id: cart.id }).first('recovered_order_id')).toEqual({ recovered_order_id: null });
      const other = await openShop(h);
      await expect(recoverCart(h.db, other.actor(), cart.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });

  describe('reviews', () => {
    it('takes a review of a product from the customer’s delivered order, pending moderation, and writes review.created', async () => {
      const oud = await forSale(h, shop, 1_000);
      const order = await deliveredOrder(h, shop, [oud]);
      h.clock.advance(1000);
      const review = await writeReview(h.db, shop.actor(), { customerId: shop.customer.id, orderId: order.id, productId: oud, rating: 5, content: 'ممتاز' });
      expect(review).toMatchObject({ status: 'pending', moderated_at: null, rating: 5, content: 'ممتاز', order_id: order.id, product_id: oud });
      const events = await eventsNow();
      expect(events.map((event) => event.type)).toEqual(['review.created']);
      expect(eventSchemaErrors(events[0] as (typeof events)[0])).toEqual([]);
      expect(events[0]?.payload.data).toMatchObject({ review: { id: review.id, customer: { id: shop.customer.id }, status: 'pending' } });
    });

    it('refuses a review of an undelivered order, another customer’s order, a product the order lacks, a second one, or a bad rating, and writes nothing', async () => {
      const oud = await forSale(h, shop, 1_000);
      const musk = await forSale(h, shop, 1_000);
      const delivered = await deliveredOrder(h, shop, [oud]);
      const pending = await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: musk, quantity: 1 }] });
      const base = { customerId: shop.customer.id, orderId: delivered.id, productId: oud, rating: 4, content: 'good' };
      await writeReview(h.db, shop.actor(), base);
      const eventsBefore = await countOf('outbox_events');
      const refusals: Array<[Partial<typeof base>, string]> = [
        [{ orderId: pending.id, productId: musk }, 'REVIEW_NOT_ALLOWED'],
        [{ customerId: shop.other.id }, 'REVIEW_NOT_ALLOWED'],
        [{ productId: musk }, 'REVIEW_NOT_ALLOWED'],
        [{}, 'REVIEW_NOT_ALLOWED'],
        [{ orderId: 999_999_999 }, 'REVIEW_NOT_ALLOWED'],
        [{ rating: 0 }, 'VALIDATION_FAILED'],
        [{ rating: 6 }, 'VALIDATION_FAILED'],
        [{ rating: 4.5 }, 'VALIDATION_FAILED'],
        [{ content: 'x'.repeat(5001) }, 'VALIDATION_FAILED'],
      ];
      for (const [change, code] of refusals) {
        await expect(writeReview(h.db, shop.actor(), { ...base, ...change })).rejects.toMatchObject({ code });
      }
      const other = await openShop(h);
      await expect(writeReview(h.db, other.actor(), { ...base, customerId: other.customer.id })).rejects.toMatchObject({ code: 'REVIEW_NOT_ALLOWED' });
      expect([await countOf('reviews'), await countOf('outbox_events')]).toEqual([1, eventsBefore]);
    });
  });
});
