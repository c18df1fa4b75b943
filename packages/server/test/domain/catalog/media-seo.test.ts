import { toIso } from '../../../src/core/clock';
import { endStoreMigration, startStoreMigration } from '../../../src/platform/stores';
import { expectError } from '../../support/auth-steps';
import {
  FIXTURE_TIME,
  HUGE_ID,
  insertProduct,
  MALFORMED_IDS,
  OVERSIZED_TEXT,
  type ProductOverrides,
  productEvents,
  productRow,
  productState,
  type StoreApi,
  storeWithFullAccess,
  tokenWithScopes,
} from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { type StoreFixture, suiteHarness, UUID } from '../../support/harness';

const CDN = 'https://cdn.example.com/stores/demo';
const image = (name: string, extra: Record<string, unknown> = {}) => ({ url: `${CDN}/${name}.jpg`, ...extra });
const mediaPath = (id: number | string) => `products/${id}/media`;
const seoPath = (id: number | string) => `products/${id}/seo`;

describe.each(testDatabases())('product media and SEO on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let shop: { store: StoreFixture; api: StoreApi };
  let other: { store: StoreFixture; api: StoreApi };

  beforeAll(async () => {
    shop = await storeWithFullAccess(h, 'Royal Oud');
    other = await storeWithFullAccess(h, 'Desert Rose');
  });

  const product = (overrides: ProductOverrides = {}, storeId = shop.store.store.id) => insertProduct(h.db, storeId, overrides);
  const stateOf = (id: number) => productState(h.db, shop.store.store.id, id);
  const tokenFor = async (scopes: string[]) => shop.api.as(await tokenWithScopes(h, shop.store, scopes));

  /** The one `product.updated` event about the product, checked as the webhook envelope. */
  async function productUpdatedEvent(id: number) {
    const events = await productEvents(h.db, shop.store.store.id, id);
    expect(events.map((event) => event.type)).toEqual(['product.updated']);
    const [event] = events;
    expect(event?.payload).toEqual({
      id: expect.stringMatching(UUID),
      type: 'product.updated',
      api_version: '2026-10-15',
      store_id: shop.store.store.id,
      occurred_at: toIso(h.clock.now()),
      data: { product: expect.any(Object) },
    });
    if (!event) throw new Error('no product.updated event');
    return (event.payload.data as { product: Record<string, unknown> }).product;
  }

  /** The Product a fixture row shows, after one change at the clock's time. */
  const productView = (id: number, fields: Record<string, unknown>) => ({
    id,
    name: 'Royal Oud Perfume 100 ml',
    description: '',
    short_desc: null,
    image: null,
    images: [],
    image_alt: null,
    category: null,
    slug: null,
    keywords: [],
    supported_devices: null,
    seo_title: null,
    seo_description: null,
    og_image: null,
    product_kind: 'physical',
    status: 'inactive',
    price: '0.00',
    old_price: null,
    price_state: 'required',
    resource_version: 2,
    created_at: toIso(FIXTURE_TIME),
    updated_at: toIso(h.clock.now()),
    ...fields,
  });

  describe('products.media.get', () => {
    it('shows the images in display order, the default first, with their alternative texts, and no ETag', async () => {
      const id = await product({
        resource_version: 3,
        images: [
          { url: `${CDN}/oud-1.jpg`, alt: 'A dark glass bottle of oud perfume', sort: 0, is_default: true },
          { url: `${CDN}/oud-2.jpg`, alt: null, sort: 1, is_default: false },
        ],
      });
      const response = await shop.api.get(mediaPath(id));
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({
        product_id: id,
        images: [
          { url: `${CDN}/oud-1.jpg`, alt: 'A dark glass bottle of oud perfume', sort: 0, is_default: true },
          { url: `${CDN}/oud-2.jpg`, alt: null, sort: 1, is_default: false },
        ],
        resource_version: 3,
        updated_at: toIso(FIXTURE_TIME),
      });
      expect(response.headers.etag).toBeUndefined();

      const bare = await product();
      expect((await shop.api.get(mediaPath(bare))).body.data.images).toEqual([]);
    });

    it('accepts products.media:read or products:read; any other scope is INSUFFICIENT_SCOPE', async () => {
      const id = await product();
      for (const scope of ['products.media:read', 'products:read']) expect((await (await tokenFor([scope])).get(mediaPath(id))).status).toBe(200);
      const refused = await (await tokenFor(['products.seo:read'])).get(mediaPath(id));
      expectError(refused, 403, 'INSUFFICIENT_SCOPE');
      expect(refused.body.error.required_scopes).toEqual(['products.media:read', 'products:read']);
    });

    it('is NOT_FOUND for an unknown id, an id beyond any row and another store’s product; VALIDATION_FAILED for malformed ids', async () => {
      const theirs = await product({}, other.store.store.id);
      for (const id of [String(theirs + 1000), HUGE_ID, String(theirs)]) expectError(await shop.api.get(mediaPath(id)), 404, 'NOT_FOUND');
      for (const id of MALFORMED_IDS) expectError(await shop.api.get(mediaPath(id)), 400, 'VALIDATION_FAILED');
    });
  });

  describe('products.media.update', () => {
    it('replaces the whole list without If-Match: the marked default moves to the front, the version rises and product.updated follows the media', async () => {
      const id = await product({ name: 'Royal Oud Perfume 100 ml', images: [{ url: `${CDN}/old.jpg`, alt: 'Old', sort: 0, is_default: true }] });
      h.clock.advance(60_000);

      const response = await shop.api.patch(mediaPath(id), {
        images: [image('oud-2', { alt: 'The bottle in its gift box' }), image('oud-1', { alt: 'A dark glass bottle', is_default: true }), image('oud-3')],
      });
      expect(response.status).toBe(200);
      expect(response.headers.etag).toBeUndefined();
      const media = {
        product_id: id,
        images: [
          { url: `${CDN}/oud-1.jpg`, alt: 'A dark glass bottle', sort: 0, is_default: true },
          { url: `${CDN}/oud-2.jpg`, alt: 'The bottle in its gift box', sort: 1, is_default: false },
          { url: `${CDN}/oud-3.jpg`, alt: null, sort: 2, is_default: false },
        ],
        resource_version: 2,
        updated_at: toIso(h.clock.now()),
      };
      expect(response.body.data).toEqual(media);
      expect((await shop.api.get(mediaPath(id))).body.data).toEqual(media);
      expect(await productRow(h.db, id)).toMatchObject({ resource_version: 2, updated_at: h.clock.now() });

      expect(await productUpdatedEvent(id)).toEqual(
        productView(id, {
          image: `${CDN}/oud-1.jpg`,
          images: [`${CDN}/oud-1.jpg`, `${CDN}/oud-2.jpg`, `${CDN}/oud-3.jpg`],
          image_alt: 'A dark glass bottle',
        }),
      );
    });

    it('makes the first image the default when none is marked, and an empty list removes every image', async () => {
      const id = await product();
      const first = await shop.api.patch(mediaPath(id), { images: [image('a'), image('b', { is_default: false })] });
      expect(first.body.data.images).toEqual([
        { url: `${CDN}/a.jpg`, alt: null, sort: 0, is_default: true },
        { url: `${CDN}/b.jpg`, alt: null, sort: 1, is_default: false },
      ]);
      const cleared = await shop.api.patch(mediaPath(id), { images: [] });
      expect(cleared.status).toBe(200);
      expect(cleared.body.data).toMatchObject({ images: [], resource_version: 3 });
      const events = await productEvents(h.db, shop.store.store.id, id);
      expect(events).toHaveLength(2);
      expect(events[1]?.payload.data).toEqual({ product: expect.objectContaining({ image: null, images: [], image_alt: null, resource_version: 3 }) });
    });

    it('takes up to 20 images', async () => {
      const id = await product();
      const twenty = Array.from({ length: 20 }, (_, index) => image(`p-${index}`));
      const response = await shop.api.patch(mediaPath(id), { images: twenty });
      expect(response.status).toBe(200);
      expect(response.body.data.images.map((item: { sort: number }) => item.sort)).toEqual(Array.from({ length: 20 }, (_, index) => index));
    });

    it('refuses two defaults or a repeated URL with VALIDATION_FAILED, storing nothing', async () => {
      const id = await product({ images: [{ url: `${CDN}/kept.jpg`, alt: null, sort: 0, is_default: true }] });
      const before = await stateOf(id);
      const twoDefaults = await shop.api.patch(mediaPath(id), { images: [image('a', { is_default: true }), image('b', { is_default: true })] });
      expectError(twoDefaults, 400, 'VALIDATION_FAILED');
      expect(twoDefaults.body.error.details).toEqual([{ location: 'body', field: '/images/1/is_default', message: expect.any(String) }]);
      const repeated = await shop.api.patch(mediaPath(id), { images: [image('a'), image('b'), image('a', { alt: 'again' })] });
      expectError(repeated, 400, 'VALIDATION_FAILED');
      expect(repeated.body.error.details).toEqual([{ location: 'body', field: '/images/2/url', message: expect.any(String) }]);
      expect(await stateOf(id)).toEqual(before);
    });

    it('refuses malformed bodies (VALIDATION_FAILED) and unknown fields (UNKNOWN_FIELD), storing nothing', async () => {
      const id = await product();
      const before = await stateOf(id);
      const malformed: object[] = [
        {},
        { images: null },
        { images: image('a') },
        { images: Array.from({ length: 21 }, (_, index) => image(`p-${index}`)) },
        { images: [{ alt: 'no url' }] },
        { images: [{ url: 'ftp://cdn.example.com/a.jpg' }] },
        { images: [{ url: 'not a url' }] },
        { images: [{ url: `https://cdn.example.com/${'x'.repeat(2048)}.jpg` }] },
        { images: [image('a', { alt: 'a'.repeat(256) })] },
        { images: [image('a', { is_default: 'yes' })] },
      ];
      for (const body of malformed) expectError(await shop.api.patch(mediaPath(id), body), 400, 'VALIDATION_FAILED');
      expectError(await shop.api.patch(mediaPath(id), { images: [], image: `${CDN}/a.jpg` }), 422, 'UNKNOWN_FIELD');
      expectError(await shop.api.patch(mediaPath(id), { images: [image('a', { caption: 'x' })] }), 422, 'UNKNOWN_FIELD');
      expect(await stateOf(id)).toEqual(before);
    });

    it('needs products.media:write: products.media:read or products:write alone is INSUFFICIENT_SCOPE', async () => {
      const id = await product();
      for (const scopes of [['products.media:read'], ['products:read', 'products:write']]) {
        const refused = await (await tokenFor(scopes)).patch(mediaPath(id), { images: [image('a')] });
        expectError(refused, 403, 'INSUFFICIENT_SCOPE');
        expect(refused.body.error.required_scopes).toEqual(['products.media:write']);
      }
      expect((await productRow(h.db, id)).resource_version).toBe(1);
      const writer = await tokenFor(['products.media:read', 'products.media:write']);
      expect((await writer.patch(mediaPath(id), { images: [image('a')] })).status).toBe(200);
    });

    it('keeps stores apart: another store’s product id, an unknown id or one beyond any row is NOT_FOUND and nothing changes', async () => {
      const id = await product({ images: [{ url: `${CDN}/mine.jpg`, alt: null, sort: 0, is_default: true }] });
      const before = await stateOf(id);
      for (const pathId of [String(id), HUGE_ID]) expectError(await other.api.patch(mediaPath(pathId), { images: [] }), 404, 'NOT_FOUND');
      for (const pathId of MALFORMED_IDS) expectError(await other.api.patch(mediaPath(pathId), { images: [] }), 400, 'VALIDATION_FAILED');
      expect(await stateOf(id)).toEqual(before);
    });
  });

  describe('products.seo.get', () => {
    it('shows the slug, SEO title and description, keywords and sharing image, and no ETag', async () => {
      const id = await product({
        slug: 'royal-oud-perfume',
        seo_title: 'Royal Oud Perfume 100 ml',
        seo_description: 'A deep, warm oud with rose and amber.',
        keywords: ['oud', 'perfume'],
        resource_version: 3,
      });
      const response = await shop.api.get(seoPath(id));
      expect(response.status).toBe(200);
      expect(response.headers.etag).toBeUndefined();
      expect(response.body.data).toEqual({
        product_id: id,
        slug: 'royal-oud-perfume',
        seo_title: 'Royal Oud Perfume 100 ml',
        seo_description: 'A deep, warm oud with rose and amber.',
        keywords: ['oud', 'perfume'],
        og_image: null,
        resource_version: 3,
        updated_at: toIso(FIXTURE_TIME),
      });
    });

    it('accepts products.seo:read or products:read; any other scope is INSUFFICIENT_SCOPE', async () => {
      const id = await product();
      for (const scope of ['products.seo:read', 'products:read']) expect((await (await tokenFor([scope])).get(seoPath(id))).status).toBe(200);
      const refused = await (await tokenFor(['products.media:read'])).get(seoPath(id));
      expectError(refused, 403, 'INSUFFICIENT_SCOPE');
      expect(refused.body.error.required_scopes).toEqual(['products.seo:read', 'products:read']);
    });

    it('is NOT_FOUND for an unknown id, an id beyond any row and another store’s product; VALIDATION_FAILED for malformed ids', async () => {
      const theirs = await product({}, other.store.store.id);
      for (const id of [String(theirs + 1000), HUGE_ID, String(theirs)]) expectError(await shop.api.get(seoPath(id)), 404, 'NOT_FOUND');
      for (const id of MALFORMED_IDS) expectError(await shop.api.get(seoPath(id)), 400, 'VALIDATION_FAILED');
    });
  });

  describe('products.seo.update', () => {
    it('changes only the fields given without If-Match, keywords replace the list; the version rises and product.updated carries them', async () => {
      const [category] = (await h
        .db('categories')
        .insert({ store_id: shop.store.store.id, name: 'Perfumes', name_key: 'perfumes', created_at: FIXTURE_TIME, updated_at: FIXTURE_TIME })
        .returning('id')) as Array<number | { id: number }>;
      const categoryId = typeof category === 'number' ? category : (category?.id as number);
      const id = await product({
        name: 'Royal Oud Perfume 100 ml',
        category_id: categoryId,
        seo_description: 'Kept as it is.',
        keywords: ['old'],
        og_image: `${CDN}/share.jpg`,
      });
      h.clock.advance(60_000);

      const response = await shop.api.patch(seoPath(id), {
        slug: 'royal-oud-perfume-100ml',
        seo_title: 'Royal Oud Perfume 100 ml | عطر العود الملكي',
        keywords: ['oud', 'perfume', 'عود'],
      });
      expect(response.status).toBe(200);
      expect(response.headers.etag).toBeUndefined();
      const seo = {
        product_id: id,
        slug: 'royal-oud-perfume-100ml',
        seo_title: 'Royal Oud Perfume 100 ml | عطر العود الملكي',
        seo_description: 'Kept as it is.',
        keywords: ['oud', 'perfume', 'عود'],
        og_image: `${CDN}/share.jpg`,
        resource_version: 2,
        updated_at: toIso(h.clock.now()),
      };
      expect(response.body.data).toEqual(seo);
      expect((await shop.api.get(seoPath(id))).body.data).toEqual(seo);
      expect(await productRow(h.db, id)).toMatchObject({ resource_version: 2, updated_at: h.clock.now() });
      expect(await productUpdatedEvent(id)).toEqual(
        productView(id, {
          category: 'Perfumes',
          slug: seo.slug,
          seo_title: seo.seo_title,
          seo_description: seo.seo_description,
          keywords: seo.keywords,
          og_image: seo.og_image,
        }),
      );
    });

    it('clears a field with null and empties keywords with []', async () => {
      const id = await product({ slug: 'to-clear', seo_title: 'Title', seo_description: 'Description', keywords: ['a'], og_image: `${CDN}/share.jpg` });
      const response = await shop.api.patch(seoPath(id), { slug: null, og_image: null, seo_title: null, keywords: [] });
      expect(response.status).toBe(200);
      expect(response.body.data).toMatchObject({
        slug: null,
        og_image: null,
        seo_title: null,
        seo_description: 'Description',
        keywords: [],
        resource_version: 2,
      });
      expect(await productRow(h.db, id)).toMatchObject({ slug: null, og_image: null, seo_title: null, keywords: '[]' });
    });

    it('refuses a slug another product of the store uses (409 SLUG_TAKEN), changing nothing; its own slug and another store’s slug are fine', async () => {
      await product({ slug: 'amber-musk' });
      await product({ slug: 'rose-water' }, other.store.store.id);
      const id = await product({ slug: 'own-slug', seo_title: 'Kept' });
      const before = await stateOf(id);

      const refused = await shop.api.patch(seoPath(id), { slug: 'amber-musk', seo_title: 'Not kept' });
      expectError(refused, 409, 'SLUG_TAKEN');
      expect(refused.body.error.details).toEqual([{ location: 'body', field: '/slug', message: expect.any(String) }]);
      expect(await stateOf(id)).toEqual(before);

      expect((await shop.api.patch(seoPath(id), { slug: 'own-slug' })).status).toBe(200);
      expect((await shop.api.patch(seoPath(id), { slug: 'rose-water' })).body.data.slug).toBe('rose-water');
    });

    it('gives a slug to exactly one of two products that ask for it at once', async () => {
      const ids = [await product(), await product()];
      const responses = await Promise.all(ids.map((id) => shop.api.patch(seoPath(id), { slug: 'contested-slug' })));
      expect(responses.map((response) => response.status).sort()).toEqual([200, 409]);
      for (const response of responses.filter((each) => each.status === 409)) expectError(response, 409, 'SLUG_TAKEN');
      const holders = await h.db('products').where({ store_id: shop.store.store.id, slug: 'contested-slug' }).select('id');
      expect(holders).toHaveLength(1);
    });

    it('refuses malformed bodies (VALIDATION_FAILED) and unknown fields (UNKNOWN_FIELD), storing nothing', async () => {
      const id = await product({ slug: 'steady', keywords: ['kept'] });
      const before = await stateOf(id);
      const malformed: object[] = [
        {},
        { slug: 'Not A Slug' },
        { slug: 'double--hyphen' },
        { slug: '' },
        { slug: 'a'.repeat(121) },
        { slug: 7 },
        { seo_title: 't'.repeat(256) },
        { seo_description: 'd'.repeat(501) },
        { keywords: null },
        { keywords: ['same', 'same'] },
        { keywords: Array.from({ length: 21 }, (_, index) => `k${index}`) },
        { keywords: ['k'.repeat(51)] },
        { keywords: [''] },
        { og_image: 'javascript:alert(1)' },
        { og_image: 42 },
      ];
      for (const body of malformed) expectError(await shop.api.patch(seoPath(id), body), 400, 'VALIDATION_FAILED');
      expectError(await shop.api.patch(seoPath(id), { seo_title: 'x', meta_robots: 'noindex' }), 422, 'UNKNOWN_FIELD');
      expect(await stateOf(id)).toEqual(before);
    });

    it('needs products.seo:write: products.seo:read or products:write alone is INSUFFICIENT_SCOPE', async () => {
      const id = await product();
      for (const scopes of [['products.seo:read'], ['products:read', 'products:write']]) {
        const refused = await (await tokenFor(scopes)).patch(seoPath(id), { seo_title: 'No' });
        expectError(refused, 403, 'INSUFFICIENT_SCOPE');
        expect(refused.body.error.required_scopes).toEqual(['products.seo:write']);
      }
      expect((await productRow(h.db, id)).seo_title).toBeNull();
      const writer = await tokenFor(['products.seo:read', 'products.seo:write']);
      expect((await writer.patch(seoPath(id), { seo_title: 'Yes' })).body.data.seo_title).toBe('Yes');
    });

    it('keeps stores apart: another store’s product id, an unknown id or one beyond any row is NOT_FOUND and nothing changes', async () => {
      const id = await product({ slug: 'mine-only', seo_title: 'Mine' });
      const before = await stateOf(id);
      await insertProduct(h.db, other.store.store.id, { slug: 'taken-there' });
      for (const pathId of [String(id), HUGE_ID]) expectError(await other.api.patch(seoPath(pathId), { slug: 'taken-there' }), 404, 'NOT_FOUND');
      for (const pathId of MALFORMED_IDS) expectError(await other.api.patch(seoPath(pathId), { seo_title: 'x' }), 400, 'VALIDATION_FAILED');
      expect(await stateOf(id)).toEqual(before);
    });
  });

  it('is 401 without a token, 415 for a body that is not JSON, 413 over 64 KiB and 503 while the store migrates, changing nothing', async () => {
    const { store, api } = await storeWithFullAccess(h, 'Moving Store');
    const id = await insertProduct(h.db, store.store.id, { slug: 'moving' });
    const before = await productState(h.db, store.store.id, id);
    const paths = [mediaPath(id), seoPath(id)];
    const bodies = { [mediaPath(id)]: { images: [] }, [seoPath(id)]: { seo_title: 'x' } };

    for (const path of paths) {
      expectError(await api.anonymous('get', path), 401, 'UNAUTHENTICATED');
      expectError(await api.anonymous('patch', path).send(bodies[path] as object), 401, 'UNAUTHENTICATED');
      expectError(await api.call('patch', path).type('text/plain').send('seo_title=x'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
    expectError(await api.patch(mediaPath(id), { images: [image('a', { alt: OVERSIZED_TEXT })] }), 413, 'PAYLOAD_TOO_LARGE');
    expectError(await api.patch(seoPath(id), { seo_description: OVERSIZED_TEXT }), 413, 'PAYLOAD_TOO_LARGE');

    await startStoreMigration(h.services, store.store.id);
    for (const path of paths) {
      expectError(await api.get(path), 503, 'STORE_MIGRATING');
      expectError(await api.patch(path, bodies[path] as object), 503, 'STORE_MIGRATING');
    }
    await endStoreMigration(h.services, store.store.id);
    expect(await productState(h.db, store.store.id, id)).toEqual(before);
  });
});
