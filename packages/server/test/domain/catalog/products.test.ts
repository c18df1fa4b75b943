import type request from 'supertest';
import { toIso } from '../../../src/core/clock';
import type { Product } from '../../../src/domain/catalog/products/row';
import { expectError } from '../../support/auth-steps';
import {
  createProductVia,
  etagOfVersion,
  expectNothingStored,
  getProductCall,
  insertCategory,
  openShop,
  outboxPayloads,
  outboxRows,
  patchProduct,
  postProduct,
  productRows,
  type Shop,
} from '../../support/catalog-products';
import { testDatabases } from '../../support/databases';
import { suiteHarness, UUID } from '../../support/harness';

const IMAGE_1 = 'https://cdn.example.com/stores/demo/oud-1.jpg';
const IMAGE_2 = 'https://cdn.example.com/stores/demo/oud-2.jpg';
/** A well-formed ETag that no resource has. */
const FOREIGN_ETAG = `"p1.1.${'A'.repeat(43)}"`;
const BAD_IDS = ['0', '01', '-1', 'abc', '1.5', '1234567890123456'];
/** Well-formed (at most 15 digits) but beyond any row. */
const HUGE_ID = '99999999999';
const MINUTE = 60_000;

/** What `products.create` answers for `name` and `product_kind` alone (the interface's States and transitions table). */
const createdDefaults = (name: string, product_kind: string, at: number) => ({
  id: expect.any(Number),
  name,
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
  product_kind,
  status: 'inactive',
  price: '0.00',
  old_price: null,
  price_state: 'required',
  resource_version: 1,
  created_at: toIso(at),
  updated_at: toIso(at),
});

const expectInsufficientScope = (response: request.Response, scope: string) => {
  expectError(response, 403, 'INSUFFICIENT_SCOPE');
  expect(response.headers['www-authenticate']).toContain('error="insufficient_scope"');
  expect(response.headers['www-authenticate']).toContain(scope);
};

const sendRaw = (test: request.Test, contentType: string, body: string) => test.set('Content-Type', contentType).send(body);

describe.each(testDatabases())('products on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  /** The product as stored now, through the API (what every "nothing changed" check compares). */
  const currentProduct = async (shop: Shop, id: number) => {
    const response = await getProductCall(h.app, shop.storeId, shop.tokens.full, id);
    expect(response.status).toBe(200);
    return { product: response.body.data as Product, etag: response.headers.etag as string };
  };

  const updatedEvents = (shop: Shop) => outboxPayloads(h.db, shop.storeId, 'product.updated');

  describe('products.create', () => {
    it('creates an inactive product priced 0.00 with price_state required when no price is sent, with its ETag', async () => {
      const shop = await openShop(h, 'writer');
      const response = await postProduct(h.app, shop.storeId, shop.tokens.writer, { name: 'Gift card 100 SAR', product_kind: 'digital' });
      expect(response.status).toBe(201);
      expect(response.body.data).toEqual(createdDefaults('Gift card 100 SAR', 'digital', h.clock.now()));
      expect(response.headers.etag).toMatch(etagOfVersion(1));
      expect(response.headers['x-request-id']).toBe(response.body.meta.request_id);
      expect(response.body.execution).toMatchObject({ storeId: shop.storeId, requestId: response.body.meta.request_id });
      expect(response.headers['idempotent-replayed']).toBeUndefined();

      const read = await currentProduct(shop, response.body.data.id);
      expect(read).toEqual({ product: response.body.data, etag: response.headers.etag });
    });

    it('takes every field of the create body: the category by name, case-insensitively, and a sent price makes price_state ready', async () => {
      const shop = await openShop(h);
      await insertCategory(h, shop.storeId, 'Perfumes');
      const response = await postProduct(h.app, shop.storeId, shop.tokens.full, {
        name: 'Royal Oud Perfume 100 ml',
        product_kind: 'physical',
        description: '<p>A deep, warm oud with rose and amber.</p>',
        short_desc: 'Oud, rose and amber.',
        image: IMAGE_1,
        images: [IMAGE_2, IMAGE_1],
        image_alt: 'A dark glass bottle of oud perfume',
        category: 'perfumes',
        slug: 'royal-oud-perfume',
        keywords: ['oud', 'perfume'],
        supported_devices: ['ios', 'android'],
        seo_title: 'Royal Oud Perfume 100 ml',
        seo_description: 'A deep, warm oud with rose and amber.',
        og_image: IMAGE_2,
        price: '349.00',
        old_price: '399.00',
      });
      expect(response.status).toBe(201);
      expect(response.body.data).toEqual({
        ...createdDefaults('Royal Oud Perfume 100 ml', 'physical', h.clock.now()),
        description: '<p>A deep, warm oud with rose and amber.</p>',
        short_desc: 'Oud, rose and amber.',
        image: IMAGE_1,
        images: [IMAGE_1, IMAGE_2],
        image_alt: 'A dark glass bottle of oud perfume',
        category: 'Perfumes',
        slug: 'royal-oud-perfume',
        keywords: ['oud', 'perfume'],
        supported_devices: { ios: true, android: true },
        seo_title: 'Royal Oud Perfume 100 ml',
        seo_description: 'A deep, warm oud with rose and amber.',
        og_image: IMAGE_2,
        status: 'inactive',
        price: '349.00',
        old_price: '399.00',
        price_state: 'ready',
      });
    });

    it('without image, the first of images is the default; a price of 0.00 sent is a price set (ready)', async () => {
      const shop = await openShop(h);
      const { product } = await createProductVia(h.app, shop.storeId, shop.tokens.full, {
        images: [IMAGE_2, IMAGE_1],
        price: '0.00',
        category: null,
        image: null,
      });
      expect(product).toMatchObject({ image: IMAGE_2, images: [IMAGE_2, IMAGE_1], image_alt: null, category: null, price: '0.00', price_state: 'ready' });
    });

    it('writes a product.created event carrying the product, attributed to the installation, in the outbox', async () => {
      const shop = await openShop(h);
      const response = await postProduct(h.app, shop.storeId, shop.tokens.full, { name: 'Oud oil', product_kind: 'physical', keywords: ['oud'] });
      expect(response.status).toBe(201);
      expect(await outboxPayloads(h.db, shop.storeId)).toEqual([
        {
          id: expect.stringMatching(UUID),
          type: 'product.created',
          api_version: '2026-10-15',
          store_id: shop.storeId,
          occurred_at: response.body.data.created_at,
          data: { product: response.body.data },
        },
      ]);
      const [row] = await outboxRows(h.db, shop.storeId);
      expect(row.installation_id).toBe(response.body.execution.installationId);
    });

    it("is CATEGORY_NOT_FOUND (422) when the named category does not exist in the store (another store's does not count); nothing is stored, and the key replays the error", async () => {
      const shop = await openShop(h);
      const other = await openShop(h);
      await insertCategory(h, other.storeId, 'Gift sets');
      for (const category of ['Gift sets', 'No such category']) {
        const response = await postProduct(h.app, shop.storeId, shop.tokens.full, { name: 'Box', product_kind: 'physical', category }, `key ${category}`);
        expectError(response, 422, 'CATEGORY_NOT_FOUND');
        expect(response.headers['idempotent-replayed']).toBeUndefined();
      }
      const replayed = await postProduct(
        h.app,
        shop.storeId,
        shop.tokens.full,
        { name: 'Box', product_kind: 'physical', category: 'Gift sets' },
        'key Gift sets',
      );
      expectError(replayed, 422, 'CATEGORY_NOT_FOUND');
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      await expectNothingStored(h.db, shop.storeId);
    });

    it('is SLUG_TAKEN (409) when another product of the store has the slug; another store may use it', async () => {
      const shop = await openShop(h);
      const other = await openShop(h);
      await createProductVia(h.app, shop.storeId, shop.tokens.full, { slug: 'royal-oud' });
      const taken = await postProduct(h.app, shop.storeId, shop.tokens.full, { name: 'Another oud', product_kind: 'physical', slug: 'royal-oud' });
      expectError(taken, 409, 'SLUG_TAKEN');
      expect(await productRows(h.db, shop.storeId)).toHaveLength(1);
      expect(await outboxRows(h.db, shop.storeId)).toHaveLength(1);
      const elsewhere = await postProduct(h.app, other.storeId, other.tokens.full, { name: 'Another oud', product_kind: 'physical', slug: 'royal-oud' });
      expect(elsewhere.status).toBe(201);
      expect(elsewhere.body.data.slug).toBe('royal-oud');
    });

    it('gives a slug to one of five concurrent creates; the others are 409 SLUG_TAKEN', async () => {
      const shop = await openShop(h);
      const responses = await Promise.all(
        Array.from({ length: 5 }, (_, index) =>
          postProduct(h.app, shop.storeId, shop.tokens.full, { name: `Oud ${index}`, product_kind: 'physical', slug: 'contested' }),
        ),
      );
      expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
      for (const response of responses.filter((candidate) => candidate.status !== 201)) expectError(response, 409, 'SLUG_TAKEN');
      expect(await productRows(h.db, shop.storeId)).toHaveLength(1);
      expect(await outboxRows(h.db, shop.storeId)).toHaveLength(1);
    });

    it('refuses an old_price that is not above the price (400 VALIDATION_FAILED); nothing is stored', async () => {
      const shop = await openShop(h);
      for (const prices of [{ price: '10.00', old_price: '10.00' }, { price: '10.00', old_price: '9.99' }, { old_price: '0.00' }]) {
        const response = await postProduct(h.app, shop.storeId, shop.tokens.full, { name: 'Box', product_kind: 'physical', ...prices });
        expectError(response, 400, 'VALIDATION_FAILED');
        expect(response.body.error.details).toEqual([expect.objectContaining({ location: 'body', field: '/old_price' })]);
      }
      await expectNothingStored(h.db, shop.storeId);
    });

    it('needs products:write, and products.prices:write as well for price or old_price (403 INSUFFICIENT_SCOPE); nothing is stored', async () => {
      const shop = await openShop(h, 'writer', 'reader', 'pricer');
      for (const prices of [{ price: '349.00' }, { old_price: '399.00' }, { old_price: null }]) {
        const response = await postProduct(h.app, shop.storeId, shop.tokens.writer, { name: 'Box', product_kind: 'physical', ...prices });
        expectInsufficientScope(response, 'products.prices:write');
      }
      expectInsufficientScope(await postProduct(h.app, shop.storeId, shop.tokens.reader, { name: 'Box', product_kind: 'physical' }), 'products:write');
      expectInsufficientScope(
        await postProduct(h.app, shop.storeId, shop.tokens.pricer, { name: 'Box', product_kind: 'physical', price: '1.00' }),
        'products:write',
      );
      await expectNothingStored(h.db, shop.storeId);

      const unpriced = await postProduct(h.app, shop.storeId, shop.tokens.writer, { name: 'Box', product_kind: 'physical' });
      expect(unpriced.status).toBe(201);
    });

    it('replays the first response to a repeated Idempotency-Key (Idempotent-Replayed: true) and creates nothing more; another body under the key is 422 IDEMPOTENCY_KEY_REUSED', async () => {
      const shop = await openShop(h);
      const body = { name: 'Musk 50 ml', product_kind: 'physical' };
      const first = await postProduct(h.app, shop.storeId, shop.tokens.full, body, 'musk-key');
      const again = await postProduct(h.app, shop.storeId, shop.tokens.full, body, 'musk-key');
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      expect(again.headers.etag).toBe(first.headers.etag);
      expect(again.body.meta.request_id).toBe(again.headers['x-request-id']);
      expectError(await postProduct(h.app, shop.storeId, shop.tokens.full, { ...body, name: 'Musk 100 ml' }, 'musk-key'), 422, 'IDEMPOTENCY_KEY_REUSED');
      expect(await productRows(h.db, shop.storeId)).toHaveLength(1);
      expect(await outboxRows(h.db, shop.storeId)).toHaveLength(1);
    });

    it('is 400 IDEMPOTENCY_KEY_REQUIRED without Idempotency-Key, and 400 for a key over 128 characters; nothing is stored', async () => {
      const shop = await openShop(h);
      expectError(await postProduct(h.app, shop.storeId, shop.tokens.full, { name: 'Box', product_kind: 'physical' }, null), 400, 'IDEMPOTENCY_KEY_REQUIRED');
      expectError(
        await postProduct(h.app, shop.storeId, shop.tokens.full, { name: 'Box', product_kind: 'physical' }, 'k'.repeat(129)),
        400,
        'VALIDATION_FAILED',
      );
      await expectNothingStored(h.db, shop.storeId);
    });

    it('makes one product of 50 concurrent creates with one Idempotency-Key', async () => {
      const shop = await openShop(h);
      const body = { name: 'Amber 30 ml', product_kind: 'physical' };
      const responses = await Promise.all(Array.from({ length: 50 }, () => postProduct(h.app, shop.storeId, shop.tokens.full, body, 'one-key')));
      const created = responses.filter((response) => response.status === 201);
      const inProgress = responses.filter((response) => response.status !== 201);
      for (const response of inProgress) expectError(response, 409, 'IDEMPOTENCY_KEY_IN_PROGRESS');
      expect(created.filter((response) => response.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      expect(new Set(created.map((response) => response.body.data.id)).size).toBe(1);
      expect(await productRows(h.db, shop.storeId)).toHaveLength(1);
      expect(await outboxRows(h.db, shop.storeId)).toHaveLength(1);
    });

    describe('refuses bad input before anything is stored', () => {
      let shop: Shop;
      beforeAll(async () => {
        shop = await openShop(h);
      });
      afterEach(() => expectNothingStored(h.db, shop.storeId));

      const valid = { name: 'Box', product_kind: 'physical' };
      const twentyOne = Array.from({ length: 20 }, (_, index) => `https://cdn.example.com/${index}.jpg`);
      it.each([
        ['an empty name', { ...valid, name: '' }],
        ['a name over 255 characters', { ...valid, name: 'n'.repeat(256) }],
        ['a name that is a number', { ...valid, name: 42 }],
        ['no product_kind', { name: 'Box' }],
        ['an unknown product_kind', { ...valid, product_kind: 'food' }],
        ['a description over 20000 characters', { ...valid, description: 'd'.repeat(20001) }],
        ['a short_desc over 500 characters', { ...valid, short_desc: 's'.repeat(501) }],
        ['a price that is a number', { ...valid, price: 349 }],
        ['a price with one decimal', { ...valid, price: '349.5' }],
        ['a negative price', { ...valid, price: '-1.00' }],
        ['a price over 999999999.99', { ...valid, price: '1000000000.00' }],
        ['a slug with spaces and capitals', { ...valid, slug: 'Royal Oud' }],
        ['a slug over 120 characters', { ...valid, slug: 'a'.repeat(121) }],
        ['a keyword twice', { ...valid, keywords: ['oud', 'oud'] }],
        ['keywords that are not a list', { ...valid, keywords: 'oud' }],
        ['an image that is not an http(s) URL', { ...valid, images: ['ftp://cdn.example.com/a.jpg'] }],
        ['supported_devices as a string', { ...valid, supported_devices: 'ios' }],
        ['an empty category name', { ...valid, category: '' }],
        ['a category name over 100 characters', { ...valid, category: 'c'.repeat(101) }],
        ['an image_alt without any image', { ...valid, image_alt: 'A bottle' }],
        ['more than 20 images, image included', { ...valid, image: 'https://cdn.example.com/main.jpg', images: twentyOne }],
        ['a body that is a list', [valid]],
      ])('400 VALIDATION_FAILED for %s', async (_case, body) => {
        const response = await postProduct(h.app, shop.storeId, shop.tokens.full, body);
        expectError(response, 400, 'VALIDATION_FAILED');
      });

      it.each([
        ['an unknown field', { ...valid, color: 'red' }],
        ['status, which a create does not take', { ...valid, status: 'active' }],
        ["price_state, which is not the client's to set", { ...valid, price_state: 'ready' }],
      ])('422 UNKNOWN_FIELD for %s', async (_case, body) => {
        const response = await postProduct(h.app, shop.storeId, shop.tokens.full, body);
        expectError(response, 422, 'UNKNOWN_FIELD');
      });

      it('400 VALIDATION_FAILED for malformed JSON', async () => {
        expectError(
          await sendRaw(postProduct(h.app, shop.storeId, shop.tokens.full, undefined), 'application/json', '{"name": "Box",'),
          400,
          'VALIDATION_FAILED',
        );
      });

      it('413 PAYLOAD_TOO_LARGE for a body over 65536 bytes', async () => {
        expectError(await postProduct(h.app, shop.storeId, shop.tokens.full, { ...valid, description: 'd'.repeat(70_000) }), 413, 'PAYLOAD_TOO_LARGE');
      });

      it('415 UNSUPPORTED_MEDIA_TYPE for a body that is not JSON', async () => {
        expectError(await sendRaw(postProduct(h.app, shop.storeId, shop.tokens.full, undefined), 'text/plain', 'name=Box'), 415, 'UNSUPPORTED_MEDIA_TYPE');
      });

      it("404 STORE_NOT_FOUND for another store's path", async () => {
        const other = await openShop(h);
        expectError(await postProduct(h.app, other.storeId, shop.tokens.full, valid), 404, 'STORE_NOT_FOUND');
        await expectNothingStored(h.db, other.storeId);
      });
    });
  });

  describe('products.get', () => {
    it('answers the product with its ETag; products:read suffices, other scopes do not', async () => {
      const shop = await openShop(h, 'reader', 'priceReader', 'unrelated');
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const read = await getProductCall(h.app, shop.storeId, shop.tokens.reader, product.id);
      expect(read.status).toBe(200);
      expect(read.body.data).toEqual(product);
      expect(read.headers.etag).toBe(etag);
      expectInsufficientScope(await getProductCall(h.app, shop.storeId, shop.tokens.priceReader, product.id), 'products:read');
      expectInsufficientScope(await getProductCall(h.app, shop.storeId, shop.tokens.unrelated, product.id), 'products:read');
    });

    it("is 404 NOT_FOUND for an unknown id, a huge one and another store's product", async () => {
      const shop = await openShop(h);
      const other = await openShop(h);
      const { product } = await createProductVia(h.app, other.storeId, other.tokens.full);
      for (const id of [product.id, product.id + 1000, HUGE_ID]) {
        expectError(await getProductCall(h.app, shop.storeId, shop.tokens.full, id), 404, 'NOT_FOUND');
        expectError(await getProductCall(h.app, shop.storeId, shop.tokens.full, id, 'prices'), 404, 'NOT_FOUND');
      }
    });

    it("is 404 STORE_NOT_FOUND with a token of another store, even for that store's product", async () => {
      const shop = await openShop(h);
      const other = await openShop(h);
      const { product } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      expectError(await getProductCall(h.app, shop.storeId, other.tokens.full, product.id), 404, 'STORE_NOT_FOUND');
    });
  });

  it('refuses malformed ids (0, 01, -1, …) with 400 VALIDATION_FAILED on every product operation; nothing changes', async () => {
    const shop = await openShop(h);
    const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
    for (const id of BAD_IDS) {
      expectError(await getProductCall(h.app, shop.storeId, shop.tokens.full, id), 400, 'VALIDATION_FAILED');
      expectError(await getProductCall(h.app, shop.storeId, shop.tokens.full, id, 'prices'), 400, 'VALIDATION_FAILED');
      expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, id, 'content', { name: 'X' }, etag), 400, 'VALIDATION_FAILED');
      expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, id, 'prices', { price: '1.00' }, etag), 400, 'VALIDATION_FAILED');
    }
    expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, HUGE_ID, 'content', { name: 'X' }, etag), 404, 'NOT_FOUND');
    expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, HUGE_ID, 'prices', { price: '1.00' }, etag), 404, 'NOT_FOUND');
    expect(await currentProduct(shop, product.id)).toEqual({ product, etag });
  });

  describe('products.content', () => {
    it('changes name, descriptions, category and supported devices, raises resource_version and answers the new ETag', async () => {
      const shop = await openShop(h, 'writer');
      await insertCategory(h, shop.storeId, 'Perfumes');
      await insertCategory(h, shop.storeId, 'Gift sets');
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full, { category: 'Perfumes', short_desc: 'Oud.', keywords: ['oud'] });
      h.clock.advance(MINUTE);
      const changes = { name: 'Royal Oud (gift box)', description: '<p>Boxed.</p>', short_desc: null, category: 'GIFT SETS', supported_devices: ['ios'] };
      const response = await patchProduct(h.app, shop.storeId, shop.tokens.writer, product.id, 'content', changes, etag);
      expect(response.status).toBe(200);
      const expected = {
        ...product,
        ...changes,
        category: 'Gift sets',
        supported_devices: { ios: true },
        resource_version: 2,
        updated_at: toIso(h.clock.now()),
      };
      expect(response.body.data).toEqual(expected);
      expect(response.headers.etag).toMatch(etagOfVersion(2));
      expect(await currentProduct(shop, product.id)).toEqual({ product: expected, etag: response.headers.etag });

      const cleared = await patchProduct(
        h.app,
        shop.storeId,
        shop.tokens.writer,
        product.id,
        'content',
        { category: null, supported_devices: null },
        response.headers.etag,
      );
      expect(cleared.status).toBe(200);
      expect(cleared.body.data).toEqual({ ...expected, category: null, supported_devices: null, resource_version: 3 });
    });

    it('leaves the fields it is not sent as they are', async () => {
      const shop = await openShop(h);
      await insertCategory(h, shop.storeId, 'Perfumes');
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full, {
        description: 'Long',
        short_desc: 'Short',
        category: 'Perfumes',
        supported_devices: ['android'],
        price: '5.00',
        image: IMAGE_1,
        slug: 'kept',
      });
      const response = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'Renamed' }, etag);
      expect(response.body.data).toEqual({ ...product, name: 'Renamed', resource_version: 2 });
    });

    it('writes a product.updated event carrying the updated product', async () => {
      const shop = await openShop(h);
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      h.clock.advance(MINUTE);
      const response = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'Renamed' }, etag);
      expect(await updatedEvents(shop)).toEqual([
        {
          id: expect.stringMatching(UUID),
          type: 'product.updated',
          api_version: '2026-10-15',
          store_id: shop.storeId,
          occurred_at: toIso(h.clock.now()),
          data: { product: response.body.data },
        },
      ]);
    });

    it('refuses to make a product active while its price_state is required (409 PRICE_REQUIRED); once priced it activates and deactivates', async () => {
      const shop = await openShop(h);
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const refused = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'Renamed', status: 'active' }, etag);
      expectError(refused, 409, 'PRICE_REQUIRED');
      expect(await currentProduct(shop, product.id)).toEqual({ product, etag });
      expect(await updatedEvents(shop)).toEqual([]);

      const priced = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', { price: '349.00' }, etag);
      expect(priced.status).toBe(200);
      const activated = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { status: 'active' }, priced.headers.etag);
      expect(activated.status).toBe(200);
      expect(activated.body.data).toMatchObject({ status: 'active', price: '349.00', price_state: 'ready', resource_version: 3 });
      const deactivated = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { status: 'inactive' }, activated.headers.etag);
      expect(deactivated.body.data).toMatchObject({ status: 'inactive', price_state: 'ready', resource_version: 4 });
    });

    it('a product created with a price can be activated at once; inactive stays allowed without a price', async () => {
      const shop = await openShop(h);
      const priced = await createProductVia(h.app, shop.storeId, shop.tokens.full, { price: '20.00' });
      const activated = await patchProduct(h.app, shop.storeId, shop.tokens.full, priced.product.id, 'content', { status: 'active' }, priced.etag);
      expect(activated.body.data).toMatchObject({ status: 'active', price_state: 'ready' });
      const unpriced = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const inactive = await patchProduct(h.app, shop.storeId, shop.tokens.full, unpriced.product.id, 'content', { status: 'inactive' }, unpriced.etag);
      expect(inactive.body.data).toMatchObject({ status: 'inactive', price_state: 'required' });
    });

    it('is CATEGORY_NOT_FOUND (422) for a category the store does not have; nothing changes', async () => {
      const shop = await openShop(h);
      const other = await openShop(h);
      await insertCategory(h, other.storeId, 'Gift sets');
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      for (const category of ['Gift sets', 'Unknown']) {
        expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { category }, etag), 422, 'CATEGORY_NOT_FOUND');
      }
      expect(await currentProduct(shop, product.id)).toEqual({ product, etag });
      expect(await updatedEvents(shop)).toEqual([]);
    });

    it("needs If-Match: 428 without it, 412 with a stale or another resource's ETag (carrying the current one), 400 when malformed; nothing changes", async () => {
      const shop = await openShop(h);
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const otherProduct = await createProductVia(h.app, shop.storeId, shop.tokens.full, { name: 'Other' });
      const renamed = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'Renamed' }, etag);
      const current = renamed.headers.etag as string;

      expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'X' }), 428, 'PRECONDITION_REQUIRED');
      for (const stale of [etag, otherProduct.etag, FOREIGN_ETAG]) {
        const response = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'X' }, stale);
        expectError(response, 412, 'PRECONDITION_FAILED');
        expect(response.body.error.current_etag).toBe(current);
      }
      for (const malformed of ['*', 'p1.2.abc', '"p1.2.short"', `W/${current}`]) {
        expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'X' }, malformed), 400, 'VALIDATION_FAILED');
      }
      expect(await currentProduct(shop, product.id)).toEqual({ product: renamed.body.data, etag: current });
      expect(await updatedEvents(shop)).toHaveLength(1);
    });

    it('lets exactly one of two updates with the same If-Match win; the other is 412', async () => {
      const shop = await openShop(h);
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const responses = await Promise.all(
        ['First', 'Second'].map((name) => patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name }, etag)),
      );
      expect(responses.map((response) => response.status).sort()).toEqual([200, 412]);
      const winner = responses.find((response) => response.status === 200) as request.Response;
      const loser = responses.find((response) => response.status === 412) as request.Response;
      expectError(loser, 412, 'PRECONDITION_FAILED');
      expect(loser.body.error.current_etag).toBe(winner.headers.etag);
      expect(await currentProduct(shop, product.id)).toEqual({ product: winner.body.data, etag: winner.headers.etag });
      expect(winner.body.data.resource_version).toBe(2);
      expect(await updatedEvents(shop)).toHaveLength(1);
    });

    it("is 404 NOT_FOUND for another store's product, which stays unchanged", async () => {
      const shop = await openShop(h);
      const other = await openShop(h);
      const { product, etag } = await createProductVia(h.app, other.storeId, other.tokens.full);
      expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'Stolen' }, etag), 404, 'NOT_FOUND');
      expect(await currentProduct(other, product.id)).toEqual({ product, etag });
      expect(await updatedEvents(other)).toEqual([]);
      // Its ETag does not carry over to a product of this store either.
      const own = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, own.product.id, 'content', { name: 'X' }, etag), 412, 'PRECONDITION_FAILED');
    });

    it('needs products:write (403 INSUFFICIENT_SCOPE otherwise); nothing changes', async () => {
      const shop = await openShop(h, 'reader', 'pricer');
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      for (const token of [shop.tokens.reader, shop.tokens.pricer]) {
        expectInsufficientScope(await patchProduct(h.app, shop.storeId, token, product.id, 'content', { name: 'X' }, etag), 'products:write');
      }
      expect(await currentProduct(shop, product.id)).toEqual({ product, etag });
    });

    it('refuses bad input: 400 VALIDATION_FAILED, 422 UNKNOWN_FIELD for fields it does not take; nothing changes', async () => {
      const shop = await openShop(h);
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const cases: [unknown, number, string][] = [
        [{}, 400, 'VALIDATION_FAILED'],
        [{ name: '' }, 400, 'VALIDATION_FAILED'],
        [{ name: 'n'.repeat(256) }, 400, 'VALIDATION_FAILED'],
        [{ name: 7 }, 400, 'VALIDATION_FAILED'],
        [{ status: 'archived' }, 400, 'VALIDATION_FAILED'],
        [{ short_desc: 's'.repeat(501) }, 400, 'VALIDATION_FAILED'],
        [{ supported_devices: 'ios' }, 400, 'VALIDATION_FAILED'],
        [{ category: '' }, 400, 'VALIDATION_FAILED'],
        [{ price: '1.00' }, 422, 'UNKNOWN_FIELD'],
        [{ slug: 'new-slug' }, 422, 'UNKNOWN_FIELD'],
        [{ images: [IMAGE_1] }, 422, 'UNKNOWN_FIELD'],
        [{ name: 'X', colour: 'red' }, 422, 'UNKNOWN_FIELD'],
      ];
      for (const [body, status, code] of cases) {
        expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', body, etag), status, code);
      }
      expectError(
        await sendRaw(patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', undefined, etag), 'application/json', '{"name":'),
        400,
        'VALIDATION_FAILED',
      );
      expectError(
        await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { description: 'd'.repeat(70_000) }, etag),
        413,
        'PAYLOAD_TOO_LARGE',
      );
      expect(await currentProduct(shop, product.id)).toEqual({ product, etag });
      expect(await updatedEvents(shop)).toEqual([]);
    });
  });

  describe('products.prices', () => {
    it('moves price_state from required to ready with the first price, answers the price record and the new ETag; the old ETag is stale afterwards', async () => {
      const shop = await openShop(h, 'pricer');
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const before = await getProductCall(h.app, shop.storeId, shop.tokens.full, product.id, 'prices');
      expect(before.body.data).toEqual({ price: '0.00', old_price: null, price_state: 'required', resource_version: 1, updated_at: product.updated_at });
      expect(before.headers.etag).toBe(etag);

      h.clock.advance(MINUTE);
      const response = await patchProduct(h.app, shop.storeId, shop.tokens.pricer, product.id, 'prices', { price: '349.00', old_price: '399.00' }, etag);
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({ price: '349.00', old_price: '399.00', price_state: 'ready', resource_version: 2, updated_at: toIso(h.clock.now()) });
      expect(response.headers.etag).toMatch(etagOfVersion(2));
      expect(await currentProduct(shop, product.id)).toEqual({
        product: { ...product, price: '349.00', old_price: '399.00', price_state: 'ready', resource_version: 2, updated_at: toIso(h.clock.now()) },
        etag: response.headers.etag,
      });

      for (const part of ['prices', 'content'] as const) {
        const stale = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, part, part === 'prices' ? { price: '1.00' } : { name: 'X' }, etag);
        expectError(stale, 412, 'PRECONDITION_FAILED');
        expect(stale.body.error.current_etag).toBe(response.headers.etag);
      }
    });

    it('keeps old_price when it is left out, clears it with null, and refuses one that is not above the price (400); a refused change changes nothing', async () => {
      const shop = await openShop(h);
      const created = await createProductVia(h.app, shop.storeId, shop.tokens.full, { price: '349.00', old_price: '399.00' });
      const lowered = await patchProduct(h.app, shop.storeId, shop.tokens.full, created.product.id, 'prices', { price: '300.00' }, created.etag);
      expect(lowered.body.data).toMatchObject({ price: '300.00', old_price: '399.00', price_state: 'ready' });

      for (const body of [{ price: '450.00' }, { price: '10.00', old_price: '10.00' }, { price: '10.00', old_price: '9.00' }]) {
        const refused = await patchProduct(h.app, shop.storeId, shop.tokens.full, created.product.id, 'prices', body, lowered.headers.etag);
        expectError(refused, 400, 'VALIDATION_FAILED');
        expect(refused.body.error.details).toEqual([expect.objectContaining({ location: 'body', field: '/old_price' })]);
      }
      const unchanged = await getProductCall(h.app, shop.storeId, shop.tokens.full, created.product.id, 'prices');
      expect({ data: unchanged.body.data, etag: unchanged.headers.etag }).toEqual({ data: lowered.body.data, etag: lowered.headers.etag });

      const cleared = await patchProduct(
        h.app,
        shop.storeId,
        shop.tokens.full,
        created.product.id,
        'prices',
        { price: '450.00', old_price: null },
        lowered.headers.etag,
      );
      expect(cleared.body.data).toMatchObject({ price: '450.00', old_price: null, price_state: 'ready', resource_version: 3 });
    });

    it('writes a product.updated event carrying the repriced product', async () => {
      const shop = await openShop(h);
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const response = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', { price: '12.50' }, etag);
      const read = await currentProduct(shop, product.id);
      expect(read.product).toMatchObject({ price: '12.50', price_state: 'ready', resource_version: response.body.data.resource_version });
      expect(await updatedEvents(shop)).toEqual([
        expect.objectContaining({ type: 'product.updated', store_id: shop.storeId, occurred_at: read.product.updated_at, data: { product: read.product } }),
      ]);
    });

    it('needs If-Match: 428 without it, 412 with a stale one; two updates with the same If-Match: exactly one wins', async () => {
      const shop = await openShop(h);
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', { price: '1.00' }), 428, 'PRECONDITION_REQUIRED');
      expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', { price: '1.00' }, FOREIGN_ETAG), 412, 'PRECONDITION_FAILED');
      expect(await updatedEvents(shop)).toEqual([]);

      const responses = await Promise.all(
        ['10.00', '20.00'].map((price) => patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', { price }, etag)),
      );
      expect(responses.map((response) => response.status).sort()).toEqual([200, 412]);
      const winner = responses.find((response) => response.status === 200) as request.Response;
      const read = await currentProduct(shop, product.id);
      expect(read.product).toMatchObject({ price: winner.body.data.price, resource_version: 2 });
      expect(read.etag).toBe(winner.headers.etag);
      expect(await updatedEvents(shop)).toHaveLength(1);
    });

    it('needs products.prices:write (403 INSUFFICIENT_SCOPE with products:write alone); nothing changes', async () => {
      const shop = await openShop(h, 'writer', 'reader', 'priceReader');
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      for (const token of [shop.tokens.writer, shop.tokens.reader, shop.tokens.priceReader]) {
        expectInsufficientScope(await patchProduct(h.app, shop.storeId, token, product.id, 'prices', { price: '1.00' }, etag), 'products.prices:write');
      }
      expect(await currentProduct(shop, product.id)).toEqual({ product, etag });
    });

    it("is 404 NOT_FOUND for another store's product, which stays unchanged", async () => {
      const shop = await openShop(h);
      const other = await openShop(h);
      const { product, etag } = await createProductVia(h.app, other.storeId, other.tokens.full);
      expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', { price: '1.00' }, etag), 404, 'NOT_FOUND');
      expect(await currentProduct(other, product.id)).toEqual({ product, etag });
    });

    it('refuses bad input: 400 VALIDATION_FAILED, 422 UNKNOWN_FIELD; nothing changes', async () => {
      const shop = await openShop(h);
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const cases: [unknown, number, string][] = [
        [{}, 400, 'VALIDATION_FAILED'],
        [{ old_price: '10.00' }, 400, 'VALIDATION_FAILED'],
        [{ price: 349 }, 400, 'VALIDATION_FAILED'],
        [{ price: '349' }, 400, 'VALIDATION_FAILED'],
        [{ price: '0349.00' }, 400, 'VALIDATION_FAILED'],
        [{ price: '1000000000.00' }, 400, 'VALIDATION_FAILED'],
        [{ price: null }, 400, 'VALIDATION_FAILED'],
        [{ price: '1.00', old_price: 2 }, 400, 'VALIDATION_FAILED'],
        [{ price: '1.00', currency: 'SAR' }, 422, 'UNKNOWN_FIELD'],
        [{ price: '1.00', price_state: 'ready' }, 422, 'UNKNOWN_FIELD'],
      ];
      for (const [body, status, code] of cases) {
        expectError(await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', body, etag), status, code);
      }
      expectError(
        await sendRaw(patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', undefined, etag), 'application/json', '{"price":'),
        400,
        'VALIDATION_FAILED',
      );
      expect(await currentProduct(shop, product.id)).toEqual({ product, etag });
      expect(await updatedEvents(shop)).toEqual([]);
    });
  });

  describe('products.price.get', () => {
    it("answers the price, previous price and pricing state with the product's ETag to products.prices:read or products:read; other scopes get 403", async () => {
      const shop = await openShop(h, 'reader', 'priceReader', 'writer', 'unrelated');
      const { product, etag } = await createProductVia(h.app, shop.storeId, shop.tokens.full, { price: '99.00', old_price: '120.00' });
      for (const token of [shop.tokens.priceReader, shop.tokens.reader, shop.tokens.writer]) {
        const response = await getProductCall(h.app, shop.storeId, token, product.id, 'prices');
        expect(response.status).toBe(200);
        expect(response.body.data).toEqual({ price: '99.00', old_price: '120.00', price_state: 'ready', resource_version: 1, updated_at: product.updated_at });
        expect(response.headers.etag).toBe(etag);
      }
      expectInsufficientScope(await getProductCall(h.app, shop.storeId, shop.tokens.unrelated, product.id, 'prices'), 'products.prices:read');
    });

    it("an ETag read from the price record updates the content, and vice versa (prices share the product's ETag)", async () => {
      const shop = await openShop(h);
      const { product } = await createProductVia(h.app, shop.storeId, shop.tokens.full);
      const price = await getProductCall(h.app, shop.storeId, shop.tokens.full, product.id, 'prices');
      const content = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'content', { name: 'Renamed' }, price.headers.etag);
      expect(content.status).toBe(200);
      const repriced = await patchProduct(h.app, shop.storeId, shop.tokens.full, product.id, 'prices', { price: '5.00' }, content.headers.etag);
      expect(repriced.status).toBe(200);
      expect(repriced.body.data.resource_version).toBe(3);
    });
  });
});
