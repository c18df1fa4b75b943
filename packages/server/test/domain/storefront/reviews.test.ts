import request from 'supertest';
import { toIso } from '../../../src/core/clock';
import { moderateReview, writeReview } from '../../../src/domain/storefront/reviews/changes';
import { expectError } from '../../support/auth-steps';
import { HUGE_ID, MALFORMED_IDS, tokenWithScopes } from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { walkList, withCursor } from '../../support/list-walk';
import { deliveredOrder, eventsOf, forSale, openShop, type Shop } from '../../support/storefront-fixtures';

type Query = Record<string, string | number | string[]>;
type Status = 'pending' | 'published' | 'hidden';

interface ReviewBody {
  id: number;
  product_id: number;
  order_id: number | null;
  customer: Record<string, unknown>;
  rating: number;
  content: string;
  status: Status;
  moderated_at: string | null;
  created_at: string;
  updated_at: string;
}
interface ListBody {
  data: ReviewBody[];
  meta: { has_more: boolean; limit: number; next_cursor: string | null };
}

const SECOND = 1000;

describe.each(testDatabases())('reviews through HTTP on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 100_000, perClient: 100_000 } });
  const reviewsPath = (shop: Shop, suffix = '') => `/stores/${shop.storeId}/v1/reviews${suffix}`;
  const get = (path: string, token: string, query: Query = {}) => request(h.app).get(path).query(query).set('Authorization', `Bearer ${token}`);
  const moderate = (shop: Shop, id: number | string, token: string, body: unknown) =>
    request(h.app)
      .patch(reviewsPath(shop, `/${id}/moderation`))
      .set('Authorization', `Bearer ${token}`)
      .send(body as object);

  let shop: Shop;
  let other: Shop;
  const products = { oud: 0, musk: 0, amber: 0 };
  let otherStoreProduct: number;
  let otherStoreReview: number;
  const tokens = { reader: '', contacts: '', moderator: '', moderatorContacts: '', unrelated: '', customersOnly: '', otherStore: '' };

  /** The store's reviews, as the test wrote them down: product, stars, status it was moderated to, and whose. */
  const planned: Record<string, { product: keyof typeof products; rating: number; status: Status; by: 'customer' | 'other' }> = {
    oudFivePublished: { product: 'oud', rating: 5, status: 'published', by: 'customer' },
    oudThreePending: { product: 'oud', rating: 3, status: 'pending', by: 'other' },
    muskFiveHidden: { product: 'musk', rating: 5, status: 'hidden', by: 'customer' },
    muskOnePending: { product: 'musk', rating: 1, status: 'pending', by: 'customer' },
    amberFivePending: { product: 'amber', rating: 5, status: 'pending', by: 'other' },
    oudFiveHidden: { product: 'oud', rating: 5, status: 'hidden', by: 'other' },
    amberTwoPublished: { product: 'amber', rating: 2, status: 'published', by: 'customer' },
    oudFivePending: { product: 'oud', rating: 5, status: 'pending', by: 'customer' },
  };
  const names = Object.keys(planned);
  const ids: Record<string, number> = {};
  const writtenAt: Record<string, number> = {};
  const orderOf: Record<string, number> = {};

  /** A new pending review of `productId` by the store's first customer, from an order delivered for it. */
  async function pendingReview(productId = products.oud, content = 'Lasts all day.'): Promise<number> {
    const order = await deliveredOrder(h, shop, [productId]);
    return (await writeReview(h.db, shop.actor(), { customerId: shop.customer.id, orderId: order.id, productId, rating: 4, content })).id;
  }

  beforeAll(async () => {
    shop = await openShop(h);
    other = await openShop(h);
    for (const name of Object.keys(products) as Array<keyof typeof products>) products[name] = await forSale(h, shop, 10_000, { quantity: 1000 });

    for (const name of names) {
      const plan = planned[name] as (typeof planned)[string];
      const customerId = plan.by === 'customer' ? shop.customer.id : shop.other.id;
      const order = await deliveredOrder(h, shop, [products[plan.product]], customerId);
      h.clock.advance(SECOND);
      const review = await writeReview(h.db, shop.actor(), {
        customerId,
        orderId: order.id,
        productId: products[plan.product],
        rating: plan.rating,
        content: `Review ${name}`,
      });
      ids[name] = review.id;
      writtenAt[name] = h.clock.now();
      orderOf[name] = order.id;
      if (plan.status !== 'pending') await moderateReview(h.db, shop.actor(), review.id, plan.status);
    }

    otherStoreProduct = await forSale(h, other, 10_000);
    const otherOrder = await deliveredOrder(h, other, [otherStoreProduct]);
    otherStoreReview = (
      await writeReview(h.db, other.actor(), {
        customerId: other.customer.id,
        orderId: otherOrder.id,
        productId: otherStoreProduct,
        rating: 5,
        content: 'Elsewhere',
      })
    ).id;

    // Issued after the reviews' instants, so they are fresh for every test (a token lives 15 minutes).
    tokens.reader = await tokenWithScopes(h, shop.store, ['reviews:read']);
    tokens.contacts = await tokenWithScopes(h, shop.store, ['reviews:read', 'customers:read']);
    tokens.moderator = await tokenWithScopes(h, shop.store, ['reviews:read', 'reviews.moderation:write']);
    tokens.moderatorContacts = await tokenWithScopes(h, shop.store, ['reviews:read', 'reviews.moderation:write', 'customers:read']);
    tokens.unrelated = await tokenWithScopes(h, shop.store, ['products:read', 'orders:read']);
    tokens.customersOnly = await tokenWithScopes(h, shop.store, ['customers:read']);
    tokens.otherStore = await tokenWithScopes(h, other.store, ['reviews:read', 'reviews.moderation:write']);
  });

  const idsOf = (...wanted: string[]) => wanted.map((name) => ids[name] as number).sort((a, b) => a - b);
  const namesWhere = (keep: (plan: (typeof planned)[string]) => boolean) => names.filter((name) => keep(planned[name] as (typeof planned)[string]));

  /** Every review of the list for `query`, walking its pages; the number of pages served. */
  async function walk(token: string, query: Query): Promise<{ ids: number[]; pages: number }> {
    const walk = await walkList<{ id: number }>((cursor) => get(reviewsPath(shop), token, withCursor(query, cursor)));
    return { ids: walk.items.map((review) => review.id), pages: walk.pages.length };
  }

  describe('reviews.list', () => {
    it('lists every review of the store by ascending id, in every status, and none of another store', async () => {
      const response = await get(reviewsPath(shop), tokens.reader);
      expect(response.status).toBe(200);
      const body = response.body as ListBody;
      expect(body.data.map((review) => review.id)).toEqual(idsOf(...names));
      expect(body.data.map((review) => review.id)).not.toContain(otherStoreReview);
      expect(body.meta).toMatchObject({ has_more: false, limit: 25, next_cursor: null });
      expect(body.data[0]).toEqual({
        id: ids.oudFivePublished,
        product_id: products.oud,
        order_id: orderOf.oudFivePublished,
        customer: { id: shop.customer.id, name: 'Noura Al-Harbi' },
        rating: 5,
        content: 'Review oudFivePublished',
        status: 'published',
        moderated_at: toIso(writtenAt.oudFivePublished as number),
        created_at: toIso(writtenAt.oudFivePublished as number),
        updated_at: toIso(writtenAt.oudFivePublished as number),
      });
      expect(body.data[1]).toMatchObject({ id: ids.oudThreePending, status: 'pending', moderated_at: null });
    });

    it.each<Status>(['pending', 'published', 'hidden'])('status=%s lists only reviews with that status', async (status) => {
      const expected = idsOf(...namesWhere((plan) => plan.status === status));
      expect(expected.length).toBeGreaterThan(0);
      expect((await walk(tokens.reader, { status })).ids).toEqual(expected);
    });

    it.each(['oud', 'musk', 'amber'] as const)('product_id lists only the reviews of that product (%s)', async (product) => {
      const expected = idsOf(...namesWhere((plan) => plan.product === product));
      expect((await walk(tokens.reader, { product_id: String(products[product]) })).ids).toEqual(expected);
    });

    it.each([5, 3, 2, 1])('rating=%i lists only reviews with that many stars', async (rating) => {
      const expected = idsOf(...namesWhere((plan) => plan.rating === rating));
      expect(expected.length).toBeGreaterThan(0);
      expect((await walk(tokens.reader, { rating })).ids).toEqual(expected);
    });

    it('is an empty page for stars nobody gave, a product without reviews, another store’s product, and ids no product can have', async () => {
      const unreviewed = await forSale(h, shop, 10_000);
      for (const query of <Query[]>[
        { rating: 4 },
        { product_id: String(unreviewed) },
        { product_id: String(otherStoreProduct) },
        { product_id: HUGE_ID },
        { product_id: '9'.repeat(15) },
      ]) {
        expect((await walk(tokens.reader, query)).ids).toEqual([]);
      }
    });

    it('combines product, status and rating with AND', async () => {
      const oud = String(products.oud);
      expect((await walk(tokens.reader, { product_id: oud, status: 'pending' })).ids).toEqual(idsOf('oudThreePending', 'oudFivePending'));
      expect((await walk(tokens.reader, { product_id: oud, rating: 5 })).ids).toEqual(idsOf('oudFivePublished', 'oudFiveHidden', 'oudFivePending'));
      expect((await walk(tokens.reader, { status: 'hidden', rating: 5 })).ids).toEqual(idsOf('muskFiveHidden', 'oudFiveHidden'));
      expect((await walk(tokens.reader, { product_id: oud, status: 'hidden', rating: 5 })).ids).toEqual(idsOf('oudFiveHidden'));
      expect((await walk(tokens.reader, { product_id: String(products.amber), status: 'published', rating: 5 })).ids).toEqual([]);
    });

    it.each([1, 2, 3])('walks more reviews than a page (limit %i): each once, in id order, filtered or not', async (limit) => {
      const all = await walk(tokens.reader, { limit });
      expect(all.ids).toEqual(idsOf(...names));
      expect(all.pages).toBe(Math.ceil(names.length / limit));
      const fiveStars = idsOf(...namesWhere((plan) => plan.rating === 5));
      const filtered = await walk(tokens.reader, { limit, rating: 5 });
      expect(filtered.ids).toEqual(fiveStars);
      expect(filtered.pages).toBe(Math.ceil(fiveStars.length / limit));
    });

    it('is 400 INVALID_CURSOR for a cursor with other filters, of another list, or of another store', async () => {
      const first = (await get(reviewsPath(shop), tokens.reader, { limit: 1, rating: 5 })).body as ListBody;
      const cursor = first.meta.next_cursor as string;
      expect(cursor).toEqual(expect.any(String));
      const otherFilters: Query[] = [{}, { rating: 3 }, { rating: 5, status: 'pending' }, { rating: 5, product_id: String(products.oud) }];
      for (const query of otherFilters) {
        expectError(await get(reviewsPath(shop), tokens.reader, { ...query, limit: 1, cursor }), 400, 'INVALID_CURSOR');
      }
      expectError(await get(reviewsPath(other), tokens.otherStore, { limit: 1, rating: 5, cursor }), 400, 'INVALID_CURSOR');
      const ordersToken = await tokenWithScopes(h, shop.store, ['orders:read']);
      expectError(await get(`/stores/${shop.storeId}/v1/orders`, ordersToken, { limit: 1, cursor }), 400, 'INVALID_CURSOR');
      // The same cursor with its own filters goes on.
      expect((await get(reviewsPath(shop), tokens.reader, { limit: 1, rating: 5, cursor })).status).toBe(200);
    });

    it.each<[string, Query]>([
      ['an unknown status', { status: 'deleted' }],
      ['a status in another case', { status: 'Published' }],
      ['no stars', { rating: 0 }],
      ['six stars', { rating: 6 }],
      ['a negative rating', { rating: -1 }],
      ['half a star', { rating: '4.5' }],
      ['stars in words', { rating: 'five' }],
      ['stars in another notation', { rating: '5e0' }],
      ['no stars given', { rating: '' }],
      ['a product id that is no number', { product_id: 'oud' }],
      ['a product id of zero', { product_id: '0' }],
      ['a product id with a leading zero', { product_id: `0${products.oud}` }],
      ['a negative product id', { product_id: '-1' }],
      ['a product id of 16 digits', { product_id: '1'.repeat(16) }],
    ])('is 400 INVALID_FILTER for %s', async (_why, query) => {
      expectError(await get(reviewsPath(shop), tokens.reader, query), 400, 'INVALID_FILTER');
    });

    it('is 400 VALIDATION_FAILED for a repeated filter and a limit out of range', async () => {
      for (const repeated of <Query[]>[
        { status: ['pending', 'hidden'] },
        { rating: ['5', '4'] },
        { product_id: [String(products.oud), String(products.musk)] },
      ]) {
        expectError(await get(reviewsPath(shop), tokens.reader, repeated), 400, 'VALIDATION_FAILED');
      }
      expectError(await get(reviewsPath(shop), tokens.reader, { limit: 0 }), 400, 'VALIDATION_FAILED');
      expectError(await get(reviewsPath(shop), tokens.reader, { limit: 101 }), 400, 'VALIDATION_FAILED');
    });

    it('is 400 INVALID_CURSOR for a cursor that was never issued', async () => {
      expectError(await get(reviewsPath(shop), tokens.reader, { cursor: 'not-a-cursor' }), 400, 'INVALID_CURSOR');
    });

    it('answers a bad filter before it looks at the cursor', async () => {
      expectError(await get(reviewsPath(shop), tokens.reader, { rating: 9, cursor: 'not-a-cursor' }), 400, 'INVALID_FILTER');
    });

    it('is 422 UNKNOWN_FIELD for a filter the operation does not know', async () => {
      expectError(await get(reviewsPath(shop), tokens.reader, { customer_id: shop.customer.id }), 422, 'UNKNOWN_FIELD');
    });
  });

  describe('reviews.get', () => {
    it('answers the review in any status', async () => {
      for (const name of ['oudThreePending', 'muskFiveHidden', 'amberTwoPublished']) {
        const plan = planned[name] as (typeof planned)[string];
        const response = await get(reviewsPath(shop, `/${ids[name]}`), tokens.reader);
        expect(response.status).toBe(200);
        expect(response.body.data).toMatchObject({
          id: ids[name],
          product_id: products[plan.product],
          order_id: orderOf[name],
          rating: plan.rating,
          status: plan.status,
          created_at: toIso(writtenAt[name] as number),
        });
      }
    });

    it('answers what reviews.list answers for the same review', async () => {
      const listed = ((await get(reviewsPath(shop), tokens.contacts)).body as ListBody).data;
      for (const review of listed) expect((await get(reviewsPath(shop, `/${review.id}`), tokens.contacts)).body.data).toEqual(review);
    });

    it("is 404 NOT_FOUND for another store's review and for ids no review can have", async () => {
      expectError(await get(reviewsPath(shop, `/${otherStoreReview}`), tokens.reader), 404, 'NOT_FOUND');
      expectError(await get(reviewsPath(shop, `/${HUGE_ID}`), tokens.reader), 404, 'NOT_FOUND');
      expectError(await get(reviewsPath(shop, `/${Math.max(...Object.values(ids), otherStoreReview) + 1000}`), tokens.reader), 404, 'NOT_FOUND');
      // The other store's token does not reach this store at all.
      expectError(await get(reviewsPath(shop, `/${ids.oudFivePublished}`), tokens.otherStore), 404, 'STORE_NOT_FOUND');
    });

    it.each(MALFORMED_IDS)('is 400 VALIDATION_FAILED for the malformed id %s', async (id) => {
      expectError(await get(reviewsPath(shop, `/${id}`), tokens.reader), 400, 'VALIDATION_FAILED');
    });
  });

  describe('scopes and contact details', () => {
    it.each<[string, keyof typeof tokens]>([
      ['products:read and orders:read', 'unrelated'],
      ['customers:read alone', 'customersOnly'],
    ])('is 403 without reviews:read (%s) on the list and on one review', async (_scopes, token) => {
      expectError(await get(reviewsPath(shop), tokens[token]), 403, 'INSUFFICIENT_SCOPE');
      expectError(await get(reviewsPath(shop, `/${ids.oudFivePublished}`), tokens[token]), 403, 'INSUFFICIENT_SCOPE');
    });

    it('is 403 on moderation without reviews.moderation:write, and the review stays as it was', async () => {
      const id = await pendingReview();
      for (const token of [tokens.reader, tokens.contacts, tokens.unrelated, tokens.customersOnly]) {
        expectError(await moderate(shop, id, token, { status: 'published' }), 403, 'INSUFFICIENT_SCOPE');
      }
      expect((await get(reviewsPath(shop, `/${id}`), tokens.reader)).body.data).toMatchObject({ status: 'pending', moderated_at: null });
    });

    it('shows e-mail and mobile only with customers:read, and only those the shopper gave', async () => {
      const plannedIds = idsOf(...names);
      const contactsOf = async (token: string) => {
        const listed = ((await get(reviewsPath(shop), token)).body as ListBody).data
          .filter((review) => plannedIds.includes(review.id))
          .map((review) => review.customer);
        const one = (await get(reviewsPath(shop, `/${ids.oudFivePublished}`), token)).body.data.customer as Record<string, unknown>;
        return { listed, one };
      };
      const bare = await contactsOf(tokens.reader);
      expect(bare.one).toEqual({ id: shop.customer.id, name: 'Noura Al-Harbi' });
      for (const customer of bare.listed) expect(Object.keys(customer).sort()).toEqual(['id', 'name']);

      const full = await contactsOf(tokens.contacts);
      expect(full.one).toEqual({ id: shop.customer.id, name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' });
      expect(full.listed).toContainEqual({ id: shop.other.id, name: shop.other.name });
      expect(full.listed.filter((customer) => 'email' in customer)).toHaveLength(namesWhere((plan) => plan.by === 'customer').length);
    });

    it('answers a moderation with contact details only with customers:read', async () => {
      const bare = await moderate(shop, await pendingReview(), tokens.moderator, { status: 'published' });
      expect(bare.status).toBe(200);
      expect(bare.body.data.customer).toEqual({ id: shop.customer.id, name: 'Noura Al-Harbi' });
      const full = await moderate(shop, await pendingReview(), tokens.moderatorContacts, { status: 'published' });
      expect(full.status).toBe(200);
      expect(full.body.data.customer).toEqual({ id: shop.customer.id, name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' });
    });
  });

  describe('reviews.moderation', () => {
    /** A new review brought to `status` through the API (a pending one as written), and when that was. */
    async function reviewIn(status: Status): Promise<{ id: number; before: ReviewBody }> {
      const id = await pendingReview();
      if (status !== 'pending') {
        h.clock.advance(SECOND);
        expect((await moderate(shop, id, tokens.moderator, { status })).status).toBe(200);
      }
      const before = (await get(reviewsPath(shop, `/${id}`), tokens.reader)).body.data as ReviewBody;
      expect(before.status).toBe(status);
      return { id, before };
    }
    const versionOf = async (id: number) => Number((await h.db('reviews').where({ id }).first('resource_version')).resource_version);
    const eventCount = async () => (await eventsOf(h.db, shop.storeId)).length;

    it.each<[Status, 'published' | 'hidden']>([
      ['pending', 'published'],
      ['pending', 'hidden'],
      ['published', 'hidden'],
      ['hidden', 'published'],
      ['published', 'published'],
      ['hidden', 'hidden'],
    ])('takes %s → %s: the new status, moderated_at and updated_at now, nothing else changed, no event', async (from, to) => {
      const { id, before } = await reviewIn(from);
      const eventsBefore = await eventCount();
      const versionBefore = await versionOf(id);
      h.clock.advance(5 * SECOND);
      const response = await moderate(shop, id, tokens.moderator, { status: to });
      expect(response.status).toBe(200);
      const expected = { ...before, status: to, moderated_at: toIso(h.clock.now()), updated_at: toIso(h.clock.now()) };
      expect(response.body.data).toEqual(expected);
      expect((await get(reviewsPath(shop, `/${id}`), tokens.reader)).body.data).toEqual(expected);
      expect((await walk(tokens.reader, { status: to, product_id: String(products.oud) })).ids).toContain(id);
      expect(await versionOf(id)).toBe(versionBefore + 1);
      expect(await eventCount()).toBe(eventsBefore);
    });

    it.each<Status>(['pending', 'published', 'hidden'])('refuses %s → pending with 400 VALIDATION_FAILED and leaves the review as it was', async (from) => {
      const { id, before } = await reviewIn(from);
      const versionBefore = await versionOf(id);
      h.clock.advance(5 * SECOND);
      expectError(await moderate(shop, id, tokens.moderator, { status: 'pending' }), 400, 'VALIDATION_FAILED');
      expect((await get(reviewsPath(shop, `/${id}`), tokens.reader)).body.data).toEqual(before);
      expect(await versionOf(id)).toBe(versionBefore);
    });

    it.each<[string, unknown]>([
      ['no status', {}],
      ['an unknown status', { status: 'deleted' }],
      ['a status in another case', { status: 'Published' }],
      ['a status that is no string', { status: true }],
      ['a null status', { status: null }],
      ['a body that is no object', ['published']],
    ])('is 400 VALIDATION_FAILED for %s, and changes nothing', async (_why, body) => {
      const { id, before } = await reviewIn('pending');
      expectError(await moderate(shop, id, tokens.moderator, body), 400, 'VALIDATION_FAILED');
      expect((await get(reviewsPath(shop, `/${id}`), tokens.reader)).body.data).toEqual(before);
    });

    it('is 422 UNKNOWN_FIELD for a field moderation does not take: the rating and text stay as the shopper wrote them', async () => {
      const { id, before } = await reviewIn('pending');
      expectError(await moderate(shop, id, tokens.moderator, { status: 'published', rating: 1 }), 422, 'UNKNOWN_FIELD');
      expectError(await moderate(shop, id, tokens.moderator, { status: 'published', content: 'Edited' }), 422, 'UNKNOWN_FIELD');
      expect((await get(reviewsPath(shop, `/${id}`), tokens.reader)).body.data).toEqual(before);
    });

    it('is 400 for an empty JSON body and 415 without a body or for one that is not JSON', async () => {
      const { id, before } = await reviewIn('pending');
      const path = reviewsPath(shop, `/${id}/moderation`);
      const empty = await request(h.app).patch(path).set('Authorization', `Bearer ${tokens.moderator}`).set('Content-Type', 'application/json');
      expectError(empty, 400, 'VALIDATION_FAILED');
      expectError(await request(h.app).patch(path).set('Authorization', `Bearer ${tokens.moderator}`), 415, 'UNSUPPORTED_MEDIA_TYPE');
      const asText = await request(h.app)
        .patch(path)
        .set('Authorization', `Bearer ${tokens.moderator}`)
        .set('Content-Type', 'text/plain')
        .send('status=published');
      expectError(asText, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect((await get(reviewsPath(shop, `/${id}`), tokens.reader)).body.data).toEqual(before);
    });

    it("is 404 NOT_FOUND for another store's review and for ids no review can have; the other review stays pending", async () => {
      expectError(await moderate(shop, otherStoreReview, tokens.moderator, { status: 'hidden' }), 404, 'NOT_FOUND');
      expectError(await moderate(shop, HUGE_ID, tokens.moderator, { status: 'hidden' }), 404, 'NOT_FOUND');
      expectError(await moderate(shop, Math.max(...Object.values(ids), otherStoreReview) + 1000, tokens.moderator, { status: 'hidden' }), 404, 'NOT_FOUND');
      expectError(await moderate(shop, ids.oudFivePending as number, tokens.otherStore, { status: 'hidden' }), 404, 'STORE_NOT_FOUND');
      const otherReview = (await get(reviewsPath(other, `/${otherStoreReview}`), tokens.otherStore)).body.data as ReviewBody;
      expect(otherReview).toMatchObject({ status: 'pending', moderated_at: null });
      expect((await get(reviewsPath(shop, `/${ids.oudFivePending}`), tokens.reader)).body.data).toMatchObject({ status: 'pending', moderated_at: null });
    });

    it.each(MALFORMED_IDS)('is 400 VALIDATION_FAILED for the malformed id %s', async (id) => {
      expectError(await moderate(shop, id, tokens.moderator, { status: 'published' }), 400, 'VALIDATION_FAILED');
    });
  });
});
