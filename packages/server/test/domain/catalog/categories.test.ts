import type { Knex } from 'knex';
import type request from 'supertest';
import { CURSOR_TTL_MS } from '../../../src/core/cursor';
import { createCategory, updateCategory } from '../../../src/domain/catalog/categories/changes';
import type { CategoryRow } from '../../../src/domain/catalog/categories/row';
import { createProduct, updateProductContent } from '../../../src/domain/catalog/products/changes';
import { type Actor, anyVersion } from '../../../src/domain/common/actor';
import { expectError } from '../../support/auth-steps';
import {
  type CategoryTokens,
  categoryTokens,
  ETAG,
  getCategoryCall,
  listCategoriesCall,
  patchCategory,
  postCategory,
  seedCategories,
  seedProducts,
  storedCategories,
  tokenWith,
  walkCategories,
} from '../../support/catalog-categories';
import { createProductVia, getProductCall, listProductsCall, patchProduct } from '../../support/catalog-products';
import { describeOnPostgres, testDatabases } from '../../support/databases';
import { createTestStore, type StoreFixture, suiteHarness } from '../../support/harness';

const BAD_PATH_IDS = ['0', '01', '-1', 'abc', '1.5'];
const HUGE_ID = '99999999999';

describe.each(testDatabases())('categories on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  /** A fresh store and its tokens: every test works in its own store. */
  async function freshStore(name = 'Royal Oud'): Promise<{ store: StoreFixture; storeId: string; tokens: CategoryTokens }> {
    const store = await createTestStore(h, name);
    return { store, storeId: store.store.id, tokens: await categoryTokens(h, store) };
  }

  let shared: Promise<{ store: StoreFixture; storeId: string; tokens: CategoryTokens }> | undefined;
  /** One store for the tests that only prove a refusal (each checks that its own request changed nothing). */
  const sharedStore = () => (shared ??= freshStore('Refusals'));

  const create = async (storeId: string, token: string, body: object): Promise<request.Response> => {
    const response = await postCategory(h.app, storeId, token, body);
    if (response.status !== 201) throw new Error(`create answered ${response.status}: ${JSON.stringify(response.body)}`);
    return response;
  };

  const get = async (storeId: string, token: string, id: number): Promise<request.Response> => {
    const response = await getCategoryCall(h.app, storeId, token, id);
    if (response.status !== 200) throw new Error(`get answered ${response.status}: ${JSON.stringify(response.body)}`);
    return response;
  };

  describe('categories.create', () => {
    it('creates an active, top-level category at position 0 with no slug: 201, resource_version 1, products_count 0 and its ETag', async () => {
      const { storeId, tokens } = await freshStore();
      const response = await postCategory(h.app, storeId, tokens.writer, { name: 'Perfumes' });
      expect(response.status).toBe(201);
      const at = new Date(h.clock.now()).toISOString();
      expect(response.body.data).toEqual({
        id: expect.any(Number),
        name: 'Perfumes',
        slug: null,
        description: null,
        parent_id: null,
        sort_order: 0,
        status: 'active',
        image: null,
        seo_title: null,
        seo_description: null,
        products_count: 0,
        resource_version: 1,
        created_at: at,
        updated_at: at,
      });
      expect(response.headers.etag).toMatch(ETAG);
      expect(response.headers.etag).toMatch(/^"p1\.1\./);
      expect(response.headers['idempotent-replayed']).toBeUndefined();
      expect(response.body.execution.storeId).toBe(storeId);
      expect(response.body.meta.request_id).toBe(response.headers['x-request-id']);

      const read = await get(storeId, tokens.categoriesReader, response.body.data.id);
      expect(read.body.data).toEqual(response.body.data);
      expect(read.headers.etag).toBe(response.headers.etag);
    });

    it('stores every field of the body: slug, description, parent, position, status, image and SEO', async () => {
      const { storeId, tokens } = await freshStore();
      const parent = await create(storeId, tokens.writer, { name: 'Perfumes' });
      const body = {
        name: 'دهن العود',
        slug: 'oud-oils',
        description: 'Pure oud oils.',
        parent_id: parent.body.data.id,
        sort_order: 2,
        status: 'hidden',
        image: 'https://cdn.example.com/oud.jpg',
        seo_title: 'Oud oils',
        seo_description: 'Oud oils from Cambodia and India.',
      };
      const response = await postCategory(h.app, storeId, tokens.writer, body);
      expect(response.status).toBe(201);
      expect(response.body.data).toMatchObject({ ...body, products_count: 0, resource_version: 1 });
    });

    it('replays the first response for the same key and body: the same category, Idempotent-Replayed: true, one row', async () => {
      const { storeId, tokens } = await freshStore();
      const first = await postCategory(h.app, storeId, tokens.writer, { name: 'Perfumes', sort_order: 3 }, 'create-perfumes');
      const again = await postCategory(h.app, storeId, tokens.writer, { sort_order: 3, name: 'Perfumes' }, 'create-perfumes');
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      expect(again.headers.etag).toBe(first.headers.etag);
      expect(again.body.meta.request_id).toBe(again.headers['x-request-id']);
      expect(again.body.meta.request_id).not.toBe(first.body.meta.request_id);
      expect(await storedCategories(h, storeId)).toHaveLength(1);
    });

    it('refuses the same key with another body: 422 IDEMPOTENCY_KEY_REUSED and nothing stored', async () => {
      const { storeId, tokens } = await freshStore();
      await postCategory(h.app, storeId, tokens.writer, { name: 'Perfumes' }, 'reused-key');
      const other = await postCategory(h.app, storeId, tokens.writer, { name: 'Incense' }, 'reused-key');
      expectError(other, 422, 'IDEMPOTENCY_KEY_REUSED');
      expect((await storedCategories(h, storeId)).map((row) => row.name)).toEqual(['Perfumes']);
    });

    it('50 concurrent creates with one key create exactly one category; every answer is that category or IDEMPOTENCY_KEY_IN_PROGRESS', async () => {
      const { storeId, tokens } = await freshStore();
      const responses = await Promise.all(Array.from({ length: 50 }, () => postCategory(h.app, storeId, tokens.writer, { name: 'Musk' }, 'one-key-50-times')));
      const created = responses.filter((response) => response.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      for (const response of responses) {
        if (response.status !== 201) expectError(response, 409, 'IDEMPOTENCY_KEY_IN_PROGRESS');
      }
      const rows = await storedCategories(h, storeId);
      expect(rows).toHaveLength(1);
      expect(new Set(created.map((response) => response.body.data.id))).toEqual(new Set([rows[0]?.id]));
      expect(created.filter((response) => response.headers['idempotent-replayed'] === undefined)).toHaveLength(1);

      const later = await postCategory(h.app, storeId, tokens.writer, { name: 'Musk' }, 'one-key-50-times');
      expect(later.status).toBe(201);
      expect(later.headers['idempotent-replayed']).toBe('true');
      expect(later.body.data.id).toBe(rows[0]?.id);
    });

    it('concurrent creates of one name under different keys (any case): exactly one 201, the others 409 CATEGORY_NAME_TAKEN, one row', async () => {
      const { storeId, tokens } = await freshStore();
      const names = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? 'Amber' : 'AMBER'));
      const responses = await Promise.all(names.map((name) => postCategory(h.app, storeId, tokens.writer, { name })));
      expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
      for (const response of responses.filter((r) => r.status !== 201)) expectError(response, 409, 'CATEGORY_NAME_TAKEN');
      expect(await storedCategories(h, storeId)).toHaveLength(1);
    });

    it('without Idempotency-Key: 400 IDEMPOTENCY_KEY_REQUIRED; a key over 128 characters: 400 VALIDATION_FAILED; nothing stored', async () => {
      const { storeId, tokens } = await freshStore();
      expectError(await postCategory(h.app, storeId, tokens.writer, { name: 'Perfumes' }, null), 400, 'IDEMPOTENCY_KEY_REQUIRED');
      expectError(await postCategory(h.app, storeId, tokens.writer, { name: 'Perfumes' }, 'k'.repeat(129)), 400, 'VALIDATION_FAILED');
      expect(await storedCategories(h, storeId)).toHaveLength(0);
    });

    it('a name already used in the store, in any case: 409 CATEGORY_NAME_TAKEN naming the holder, nothing stored; another store may use it', async () => {
      const { storeId, tokens } = await freshStore();
      const holder = await create(storeId, tokens.writer, { name: 'Perfumes' });
      for (const name of ['Perfumes', 'PERFUMES', 'perfumes']) {
        const taken = await postCategory(h.app, storeId, tokens.writer, { name });
        expectError(taken, 409, 'CATEGORY_NAME_TAKEN');
        expect(taken.body.error.details).toEqual([
          expect.objectContaining({ location: 'body', field: '/name', message: expect.stringContaining(String(holder.body.data.id)) }),
        ]);
      }
      expect(await storedCategories(h, storeId)).toHaveLength(1);

      const other = await freshStore('Musk House');
      expect((await postCategory(h.app, other.storeId, other.tokens.writer, { name: 'perfumes' })).status).toBe(201);
    });

    it('compares non-ASCII names case-insensitively too', async () => {
      const { storeId, tokens } = await freshStore();
      await create(storeId, tokens.writer, { name: 'Ärmel Öl' });
      expectError(await postCategory(h.app, storeId, tokens.writer, { name: 'ärmel öl' }), 409, 'CATEGORY_NAME_TAKEN');
    });

    it('a slug already used in the store: 409 SLUG_TAKEN, nothing stored; another store may use it', async () => {
      const { storeId, tokens } = await freshStore();
      await create(storeId, tokens.writer, { name: 'Perfumes', slug: 'perfumes' });
      expectError(await postCategory(h.app, storeId, tokens.writer, { name: 'Perfumes 2', slug: 'perfumes' }), 409, 'SLUG_TAKEN');
      expect(await storedCategories(h, storeId)).toHaveLength(1);
      const other = await freshStore('Musk House');
      expect((await postCategory(h.app, other.storeId, other.tokens.writer, { name: 'Perfumes', slug: 'perfumes' })).status).toBe(201);
    });

    it('a parent that is not a category of the store (unknown, another store’s, out of range): 422 CATEGORY_PARENT_INVALID, nothing stored', async () => {
      const { storeId, tokens } = await freshStore();
      const other = await freshStore('Musk House');
      const foreign = await create(other.storeId, other.tokens.writer, { name: 'Foreign' });
      for (const parentId of [foreign.body.data.id, 2_000_000_000, 99_999_999_999]) {
        const response = await postCategory(h.app, storeId, tokens.writer, { name: 'Oud oils', parent_id: parentId });
        expectError(response, 422, 'CATEGORY_PARENT_INVALID');
        expect(response.body.error.details).toEqual([expect.objectContaining({ field: '/parent_id' })]);
      }
      expect(await storedCategories(h, storeId)).toHaveLength(0);
    });

    it.each([
      ['no name', 400, 'VALIDATION_FAILED', {}],
      ['an empty name', 400, 'VALIDATION_FAILED', { name: '' }],
      ['a name over 100 characters', 400, 'VALIDATION_FAILED', { name: 'n'.repeat(101) }],
      ['a name that is a number', 400, 'VALIDATION_FAILED', { name: 42 }],
      ['a slug that is not lower-case words', 400, 'VALIDATION_FAILED', { name: 'Oud', slug: 'Oud Oils' }],
      ['a null slug', 400, 'VALIDATION_FAILED', { name: 'Oud', slug: null }],
      ['a description over 5000 characters', 400, 'VALIDATION_FAILED', { name: 'Oud', description: 'd'.repeat(5001) }],
      ['parent_id 0', 400, 'VALIDATION_FAILED', { name: 'Oud', parent_id: 0 }],
      ['parent_id as a string', 400, 'VALIDATION_FAILED', { name: 'Oud', parent_id: '12' }],
      ['a negative sort_order', 400, 'VALIDATION_FAILED', { name: 'Oud', sort_order: -1 }],
      ['sort_order over 100000', 400, 'VALIDATION_FAILED', { name: 'Oud', sort_order: 100_001 }],
      ['a fractional sort_order', 400, 'VALIDATION_FAILED', { name: 'Oud', sort_order: 1.5 }],
      ['an unknown status', 400, 'VALIDATION_FAILED', { name: 'Oud', status: 'deleted' }],
      ['an image that is not an http(s) URL', 400, 'VALIDATION_FAILED', { name: 'Oud', image: 'ftp://cdn.example.com/a.jpg' }],
      ['a seo_title over 255 characters', 400, 'VALIDATION_FAILED', { name: 'Oud', seo_title: 't'.repeat(256) }],
      ['a body that is an array', 400, 'VALIDATION_FAILED', [{ name: 'Oud' }]],
      ['an unknown field', 422, 'UNKNOWN_FIELD', { name: 'Oud', colour: 'gold' }],
      ['a read-only field', 422, 'UNKNOWN_FIELD', { name: 'Oud', products_count: 3 }],
    ])('%s: %i %s and nothing stored; the key stays free', async (badCase, status, code, body) => {
      const { storeId, tokens } = await sharedStore();
      const before = (await storedCategories(h, storeId)).length;
      expectError(await postCategory(h.app, storeId, tokens.writer, body, `bad-body ${badCase}`), status, code);
      expect(await storedCategories(h, storeId)).toHaveLength(before);
      const valid = await postCategory(h.app, storeId, tokens.writer, { name: `Valid after ${badCase}` }, `bad-body ${badCase}`);
      expect(valid.status).toBe(201);
      expect(valid.headers['idempotent-replayed']).toBeUndefined();
    });
    it('a name with U+0000: 400 VALIDATION_FAILED on /name and nothing stored', async () => {
      const { storeId, tokens } = await freshStore();
      const response = await postCategory(h.app, storeId, tokens.writer, { name: 'Oud\u0000' });
      expectError(response, 400, 'VALIDATION_FAILED');
      expect(response.body.error.details).toEqual([expect.objectContaining({ location: 'body', field: '/name' })]);
      expect(await storedCategories(h, storeId)).toHaveLength(0);
    });
  });

  describe('categories.get', () => {
    it('counts the store’s products in the category as products_count', async () => {
      const { storeId, tokens } = await freshStore();
      const perfumes = await create(storeId, tokens.writer, { name: 'Perfumes' });
      const incense = await create(storeId, tokens.writer, { name: 'Incense' });
      await seedProducts(h, storeId, perfumes.body.data.id, 3);
      await seedProducts(h, storeId, incense.body.data.id, 1);
      await seedProducts(h, storeId, null, 2);
      expect((await get(storeId, tokens.productsReader, perfumes.body.data.id)).body.data.products_count).toBe(3);
      expect((await get(storeId, tokens.productsReader, incense.body.data.id)).body.data.products_count).toBe(1);
    });

    it('an unknown id, an id past the id range, or another store’s category: 404 NOT_FOUND', async () => {
      const { storeId, tokens } = await freshStore();
      const other = await freshStore('Musk House');
      const foreign = await create(other.storeId, other.tokens.writer, { name: 'Foreign' });
      for (const id of [String(foreign.body.data.id), '2000000000', HUGE_ID]) {
        expectError(await getCategoryCall(h.app, storeId, tokens.categoriesReader, id), 404, 'NOT_FOUND');
      }
    });

    it.each(BAD_PATH_IDS)('a malformed id %p: 400 VALIDATION_FAILED', async (id) => {
      const { storeId, tokens } = await freshStore();
      expectError(await getCategoryCall(h.app, storeId, tokens.categoriesReader, id), 400, 'VALIDATION_FAILED');
    });
  });

  describe('scopes', () => {
    let storeId: string;
    let tokens: CategoryTokens;
    let existing: number;

    beforeAll(async () => {
      ({ storeId, tokens } = await freshStore());
      existing = (await create(storeId, tokens.writer, { name: 'Perfumes' })).body.data.id;
    });

    it.each(['categoriesReader', 'productsReader'] as const)('list and get work with %s (categories:read or products:read)', async (who) => {
      expect((await listCategoriesCall(h.app, storeId, tokens[who])).status).toBe(200);
      expect((await getCategoryCall(h.app, storeId, tokens[who], existing)).status).toBe(200);
    });

    it('list and get without categories:read or products:read: 403 INSUFFICIENT_SCOPE naming both alternatives', async () => {
      for (const response of [await listCategoriesCall(h.app, storeId, tokens.unrelated), await getCategoryCall(h.app, storeId, tokens.unrelated, existing)]) {
        expectError(response, 403, 'INSUFFICIENT_SCOPE');
        expect(response.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
        expect(response.body.error.required_scopes).toEqual(expect.arrayContaining(['categories:read', 'products:read']));
      }
    });

    it.each(['categoriesReader', 'productsReader', 'unrelated'] as const)(
      'create and update need categories:write: %s gets 403 and nothing changes',
      async (who) => {
        expectError(await postCategory(h.app, storeId, tokens[who], { name: 'Incense' }), 403, 'INSUFFICIENT_SCOPE');
        const current = await get(storeId, tokens.writer, existing);
        expectError(await patchCategory(h.app, storeId, tokens[who], existing, { name: 'Renamed' }, current.headers.etag), 403, 'INSUFFICIENT_SCOPE');
        expect((await storedCategories(h, storeId)).map((row) => [row.name, row.resource_version])).toEqual([['Perfumes', 1]]);
      },
    );
  });

  describe('categories.update', () => {
    it('applies the changes with the current ETag: 200, resource_version + 1, a new ETag, updated_at moves; the old ETag is now stale', async () => {
      const { storeId, tokens } = await freshStore();
      const created = await create(storeId, tokens.writer, { name: 'Perfumes', slug: 'perfumes', seo_title: 'Perfumes' });
      h.clock.advance(60_000);
      const changes = {
        name: 'Perfumes and oud',
        description: 'Oud, musk and oriental perfumes.',
        status: 'hidden',
        sort_order: 5,
        slug: null,
        seo_title: null,
      };
      const updated = await patchCategory(h.app, storeId, tokens.writer, created.body.data.id, changes, created.headers.etag);
      expect(updated.status).toBe(200);
      expect(updated.body.data).toEqual({
        ...created.body.data,
        ...changes,
        resource_version: 2,
        updated_at: new Date(h.clock.now()).toISOString(),
      });
      expect(updated.headers.etag).toMatch(/^"p1\.2\./);
      expect(updated.headers.etag).not.toBe(created.headers.etag);
      expect((await get(storeId, tokens.categoriesReader, created.body.data.id)).headers.etag).toBe(updated.headers.etag);

      const stale = await patchCategory(h.app, storeId, tokens.writer, created.body.data.id, { name: 'Again' }, created.headers.etag);
      expectError(stale, 412, 'PRECONDITION_FAILED');
      expect(stale.body.error.current_etag).toBe(updated.headers.etag);
      expect(stale.headers.etag).toBe(updated.headers.etag);
      expect((await storedCategories(h, storeId))[0]).toMatchObject({ name: 'Perfumes and oud', resource_version: 2 });
    });

    it('without If-Match: 428 PRECONDITION_REQUIRED and nothing changes', async () => {
      const { storeId, tokens } = await freshStore();
      const created = await create(storeId, tokens.writer, { name: 'Perfumes' });
      expectError(await patchCategory(h.app, storeId, tokens.writer, created.body.data.id, { name: 'Renamed' }), 428, 'PRECONDITION_REQUIRED');
      expect((await storedCategories(h, storeId))[0]).toMatchObject({ name: 'Perfumes', resource_version: 1 });
    });

    it('a well-formed If-Match that is not the current ETag (another category’s, another version, forged): 412 with current_etag, nothing changes', async () => {
      const { storeId, tokens } = await freshStore();
      const target = await create(storeId, tokens.writer, { name: 'Perfumes' });
      const sibling = await create(storeId, tokens.writer, { name: 'Incense' });
      const forged = `"p1.1.${'A'.repeat(43)}"`;
      for (const ifMatch of [sibling.headers.etag, (target.headers.etag as string).replace('"p1.1.', '"p1.2.'), forged]) {
        const response = await patchCategory(h.app, storeId, tokens.writer, target.body.data.id, { name: 'Renamed' }, ifMatch);
        expectError(response, 412, 'PRECONDITION_FAILED');
        expect(response.body.error.current_etag).toBe(target.headers.etag);
      }
      expect((await storedCategories(h, storeId)).map((row) => row.resource_version)).toEqual([1, 1]);
    });

    it('an If-Match not of the ETag form (weak, `*`, a list, garbage): 400 VALIDATION_FAILED, nothing changes', async () => {
      const { storeId, tokens } = await freshStore();
      const target = await create(storeId, tokens.writer, { name: 'Perfumes' });
      for (const ifMatch of [`W/${target.headers.etag}`, '*', `${target.headers.etag}, ${target.headers.etag}`, 'not-a-tag']) {
        expectError(await patchCategory(h.app, storeId, tokens.writer, target.body.data.id, { name: 'Renamed' }, ifMatch), 400, 'VALIDATION_FAILED');
      }
      expect((await storedCategories(h, storeId))[0]).toMatchObject({ name: 'Perfumes', resource_version: 1 });
    });

    it('two concurrent updates with the same If-Match: exactly one 200 and one 412', async () => {
      const { storeId, tokens } = await freshStore();
      const created = await create(storeId, tokens.writer, { name: 'Perfumes' });
      const responses = await Promise.all(
        ['Left', 'Right'].map((name) => patchCategory(h.app, storeId, tokens.writer, created.body.data.id, { name }, created.headers.etag)),
      );
      expect(responses.map((response) => response.status).sort()).toEqual([200, 412]);
      const winner = responses.find((response) => response.status === 200) as request.Response;
      const loser = responses.find((response) => response.status === 412) as request.Response;
      expectError(loser, 412, 'PRECONDITION_FAILED');
      expect(loser.body.error.current_etag).toBe(winner.headers.etag);
      expect((await storedCategories(h, storeId))[0]).toMatchObject({ name: winner.body.data.name, resource_version: 2 });
    });

    it('a case change of its own name is allowed; another category’s name in any case: 409 CATEGORY_NAME_TAKEN; another’s slug: 409 SLUG_TAKEN', async () => {
      const { storeId, tokens } = await freshStore();
      const perfumes = await create(storeId, tokens.writer, { name: 'perfumes', slug: 'perfumes' });
      const incense = await create(storeId, tokens.writer, { name: 'Incense', slug: 'incense' });
      const recased = await patchCategory(h.app, storeId, tokens.writer, perfumes.body.data.id, { name: 'Perfumes', slug: 'perfumes' }, perfumes.headers.etag);
      expect(recased.status).toBe(200);
      expect(recased.body.data.name).toBe('Perfumes');

      expectError(
        await patchCategory(h.app, storeId, tokens.writer, incense.body.data.id, { name: 'PERFUMES' }, incense.headers.etag),
        409,
        'CATEGORY_NAME_TAKEN',
      );
      expectError(await patchCategory(h.app, storeId, tokens.writer, incense.body.data.id, { slug: 'perfumes' }, incense.headers.etag), 409, 'SLUG_TAKEN');
      expect((await storedCategories(h, storeId))[1]).toMatchObject({ name: 'Incense', slug: 'incense', resource_version: 1 });
    });

    it('the category’s products follow it: products_count is unchanged by a rename', async () => {
      const { storeId, tokens } = await freshStore();
      const created = await create(storeId, tokens.writer, { name: 'Perfumes' });
      await seedProducts(h, storeId, created.body.data.id, 2);
      const renamed = await patchCategory(h.app, storeId, tokens.writer, created.body.data.id, { name: 'Oud' }, created.headers.etag);
      expect(renamed.body.data).toMatchObject({ name: 'Oud', products_count: 2 });
    });

    describe('parents', () => {
      let storeId: string;
      let tokens: CategoryTokens;
      let root: CategoryRow;
      let child: CategoryRow;
      let grandchild: CategoryRow;
      let foreign: CategoryRow;

      beforeAll(async () => {
        ({ storeId, tokens } = await freshStore());
        [root] = (await seedCategories(h, storeId, 1, 'Root')) as [CategoryRow];
        [child] = (await seedCategories(h, storeId, 1, 'Child', { parent_id: root.id })) as [CategoryRow];
        [grandchild] = (await seedCategories(h, storeId, 1, 'Grandchild', { parent_id: child.id })) as [CategoryRow];
        const other = await createTestStore(h, 'Musk House');
        [foreign] = (await seedCategories(h, other.store.id, 1, 'Foreign')) as [CategoryRow];
      });

      const etagOf = async (id: number) => (await get(storeId, tokens.writer, id)).headers.etag as string;

      it.each([
        ['itself', () => root.id, () => root.id],
        ['its child', () => root.id, () => child.id],
        ['its grandchild', () => root.id, () => grandchild.id],
        ['a descendant of a descendant from the middle', () => child.id, () => grandchild.id],
        ['an unknown category', () => child.id, () => 2_000_000_000],
        ['another store’s category', () => child.id, () => foreign.id],
        ['an id past the id range', () => child.id, () => 99_999_999_999],
      ])('a parent that is %s: 422 CATEGORY_PARENT_INVALID and nothing changes', async (_case, target, parent) => {
        const response = await patchCategory(h.app, storeId, tokens.writer, target(), { parent_id: parent() }, await etagOf(target()));
        expectError(response, 422, 'CATEGORY_PARENT_INVALID');
        expect(response.body.error.details).toEqual([expect.objectContaining({ field: '/parent_id' })]);
        expect((await storedCategories(h, storeId)).map((row) => [row.parent_id, row.resource_version])).toEqual([
          [null, 1],
          [root.id, 1],
          [child.id, 1],
        ]);
      });

      it('moves a category under another branch and back to the top level (parent_id null)', async () => {
        const [sibling] = (await seedCategories(h, storeId, 1, 'Sibling')) as [CategoryRow];
        const moved = await patchCategory(h.app, storeId, tokens.writer, sibling.id, { parent_id: grandchild.id }, await etagOf(sibling.id));
        expect(moved.body.data).toMatchObject({ parent_id: grandchild.id, resource_version: 2 });
        const top = await patchCategory(h.app, storeId, tokens.writer, sibling.id, { parent_id: null, sort_order: 5 }, moved.headers.etag);
        expect(top.body.data).toMatchObject({ parent_id: null, sort_order: 5, resource_version: 3 });
      });
    });

    it('an ETag of store A’s category never works on store B’s; A’s token cannot reach B’s category; nothing changes in B', async () => {
      const a = await freshStore();
      const b = await freshStore('Musk House');
      const inA = await create(a.storeId, a.tokens.writer, { name: 'Perfumes' });
      const inB = await create(b.storeId, b.tokens.writer, { name: 'Perfumes' });
      const crossTag = await patchCategory(h.app, b.storeId, b.tokens.writer, inB.body.data.id, { name: 'Stolen' }, inA.headers.etag);
      expectError(crossTag, 412, 'PRECONDITION_FAILED');
      expect(crossTag.body.error.current_etag).toBe(inB.headers.etag);

      expectError(await patchCategory(h.app, a.storeId, a.tokens.writer, inB.body.data.id, { name: 'Stolen' }, inB.headers.etag), 404, 'NOT_FOUND');
      expectError(await patchCategory(h.app, b.storeId, a.tokens.writer, inB.body.data.id, { name: 'Stolen' }, inB.headers.etag), 404, 'STORE_NOT_FOUND');
      expect((await storedCategories(h, b.storeId)).map((row) => [row.name, row.resource_version])).toEqual([['Perfumes', 1]]);
    });

    it.each([
      ['an empty body', 400, 'VALIDATION_FAILED', {}],
      ['an empty name', 400, 'VALIDATION_FAILED', { name: '' }],
      ['a name over 100 characters', 400, 'VALIDATION_FAILED', { name: 'n'.repeat(101) }],
      ['a null name', 400, 'VALIDATION_FAILED', { name: null }],
      ['a null status', 400, 'VALIDATION_FAILED', { status: null }],
      ['a description with U+0000', 400, 'VALIDATION_FAILED', { description: 'a\u0000b' }],
      ['parent_id -1', 400, 'VALIDATION_FAILED', { parent_id: -1 }],
      ['an unknown field', 422, 'UNKNOWN_FIELD', { name: 'Oud', colour: 'gold' }],
      ['a read-only field', 422, 'UNKNOWN_FIELD', { resource_version: 7 }],
    ])('%s: %i %s and nothing changes', async (badCase, status, code, body) => {
      const { storeId, tokens } = await sharedStore();
      const created = await create(storeId, tokens.writer, { name: `Before ${badCase}` });
      expectError(await patchCategory(h.app, storeId, tokens.writer, created.body.data.id, body, created.headers.etag), status, code);
      expect(await h.db('categories').where({ id: created.body.data.id }).first()).toMatchObject({
        name: `Before ${badCase}`,
        description: null,
        resource_version: 1,
      });
    });

    it('malformed ids: 400 VALIDATION_FAILED; an id past the id range: 404 NOT_FOUND', async () => {
      const { storeId, tokens } = await freshStore();
      const created = await create(storeId, tokens.writer, { name: 'Perfumes' });
      for (const id of BAD_PATH_IDS) {
        expectError(await patchCategory(h.app, storeId, tokens.writer, id, { name: 'Oud' }, created.headers.etag), 400, 'VALIDATION_FAILED');
      }
      expectError(await patchCategory(h.app, storeId, tokens.writer, HUGE_ID, { name: 'Oud' }, created.headers.etag), 404, 'NOT_FOUND');
      expect((await storedCategories(h, storeId))[0]).toMatchObject({ name: 'Perfumes', resource_version: 1 });
    });
  });

  describe('updated_at follows what the answers show (incremental lists)', () => {
    const at = () => new Date(h.clock.now()).toISOString();

    async function catalogStore() {
      const { store, storeId, tokens } = await freshStore();
      const token = await tokenWith(h, store, ['categories:read', 'categories:write', 'products:read', 'products:write']);
      return { storeId, tokens, token };
    }

    it('moves a category’s updated_at when its products_count changes (a product created in it, moved in or out), not its resource_version or ETag', async () => {
      const { storeId, token } = await catalogStore();
      const perfumes = await create(storeId, token, { name: 'Perfumes' });
      const incense = await create(storeId, token, { name: 'Incense' });
      const created = at();
      const category = async (response: request.Response) => {
        const read = await get(storeId, token, response.body.data.id);
        return { ...read.body.data, etag: read.headers.etag } as { products_count: number; resource_version: number; updated_at: string; etag: string };
      };

      h.clock.advance(60_000);
      const { product, etag } = await createProductVia(h.app, storeId, token, { category: 'Perfumes' });
      expect(await category(perfumes)).toMatchObject({ products_count: 1, updated_at: at(), resource_version: 1, etag: perfumes.headers.etag });
      expect(await category(incense)).toMatchObject({ products_count: 0, updated_at: created });

      h.clock.advance(60_000);
      const moved = await patchProduct(h.app, storeId, token, product.id, 'content', { category: 'incense' }, etag);
      expect(moved.status).toBe(200);
      const movedAt = at();
      expect(await category(perfumes)).toMatchObject({ products_count: 0, updated_at: movedAt, resource_version: 1, etag: perfumes.headers.etag });
      expect(await category(incense)).toMatchObject({ products_count: 1, updated_at: movedAt, resource_version: 1, etag: incense.headers.etag });

      // The category it already has, and a change of anything else, leave the counts and both categories as they were.
      h.clock.advance(60_000);
      const same = await patchProduct(h.app, storeId, token, product.id, 'content', { category: 'Incense', name: 'Bakhoor' }, moved.headers.etag);
      expect(same.status).toBe(200);
      expect(await category(perfumes)).toMatchObject({ updated_at: movedAt });
      expect(await category(incense)).toMatchObject({ products_count: 1, updated_at: movedAt });

      h.clock.advance(60_000);
      const since = at();
      h.clock.advance(1);
      expect((await patchProduct(h.app, storeId, token, product.id, 'content', { category: null }, same.headers.etag)).status).toBe(200);
      expect(await category(incense)).toMatchObject({ products_count: 0, updated_at: at() });
      const changed = await listCategoriesCall(h.app, storeId, token, { updated_since: since });
      expect(changed.body.data.map((listed: { id: number }) => listed.id)).toEqual([incense.body.data.id]);
    });

    it('leaves the categories as they were when the move is refused (an unknown category, a stale If-Match)', async () => {
      const { storeId, token } = await catalogStore();
      const perfumes = await create(storeId, token, { name: 'Perfumes' });
      await create(storeId, token, { name: 'Incense' });
      const { product, etag: stale } = await createProductVia(h.app, storeId, token, { category: 'Perfumes' });
      const renamed = await patchProduct(h.app, storeId, token, product.id, 'content', { name: 'Bakhoor' }, stale);
      const before = await storedCategories(h, storeId);
      h.clock.advance(60_000);
      const current = renamed.headers.etag as string;
      expectError(await patchProduct(h.app, storeId, token, product.id, 'content', { category: 'Candles' }, current), 422, 'CATEGORY_NOT_FOUND');
      expectError(await patchProduct(h.app, storeId, token, product.id, 'content', { category: 'Incense' }, stale), 412, 'PRECONDITION_FAILED');
      expect(await storedCategories(h, storeId)).toEqual(before);
      expect((await get(storeId, token, perfumes.body.data.id)).body.data.products_count).toBe(1);
    });

    it('moves the updated_at of a renamed category’s products (they show its name), not their resource_version; other changes leave them', async () => {
      const { storeId, token } = await catalogStore();
      const perfumes = await create(storeId, token, { name: 'Perfumes' });
      const inside = await createProductVia(h.app, storeId, token, { category: 'Perfumes' });
      const outside = await createProductVia(h.app, storeId, token, { name: 'Amber oil' });
      const createdAt = at();
      const productNow = async (id: number) => {
        const read = await getProductCall(h.app, storeId, token, id);
        return { ...read.body.data, etag: read.headers.etag } as { category: string | null; updated_at: string; resource_version: number; etag: string };
      };

      h.clock.advance(60_000);
      const described = await patchCategory(h.app, storeId, token, perfumes.body.data.id, { description: 'Oud and musk.' }, perfumes.headers.etag);
      expect(described.status).toBe(200);
      // The same name again is no rename either.
      const same = await patchCategory(h.app, storeId, token, perfumes.body.data.id, { name: 'Perfumes' }, described.headers.etag);
      expect(same.status).toBe(200);
      expect(await productNow(inside.product.id)).toMatchObject({ category: 'Perfumes', updated_at: createdAt });

      h.clock.advance(60_000);
      const since = at();
      h.clock.advance(1);
      const renamed = await patchCategory(h.app, storeId, token, perfumes.body.data.id, { name: 'Oud perfumes' }, same.headers.etag);
      expect(renamed.status).toBe(200);
      expect(await productNow(inside.product.id)).toMatchObject({ category: 'Oud perfumes', updated_at: at(), resource_version: 1, etag: inside.etag });
      expect(await productNow(outside.product.id)).toMatchObject({ category: null, updated_at: createdAt });
      const changed = await listProductsCall(h.app, storeId, token, { updated_since: since });
      expect(changed.body.data.map((listed: { id: number; category: string }) => [listed.id, listed.category])).toEqual([[inside.product.id, 'Oud perfumes']]);
    });
  });

  describe('categories.list', () => {
    describe('paging 230 categories', () => {
      let store: StoreFixture;
      let storeId: string;
      let tokens: CategoryTokens;
      let all: number[];

      beforeAll(async () => {
        ({ store, storeId, tokens } = await freshStore());
        const rows = await seedCategories(h, storeId, 230, 'Category');
        await h
          .db('categories')
          .whereIn(
            'id',
            rows.filter((_, i) => i % 7 === 0).map((row) => row.id),
          )
          .update({ status: 'hidden' });
        all = rows.map((row) => row.id);
        // Another store's categories interleave with these ids and never show up.
        await seedCategories(h, (await createTestStore(h, 'Musk House')).store.id, 5, 'Category');
      });

      it.each([
        [1, 230],
        [25, 10],
        [100, 3],
      ])('with limit %d walks every category (hidden ones included) once, by ascending id, in %d pages', async (limit, pageCount) => {
        const { ids, pages } = await walkCategories(h.app, storeId, tokens.categoriesReader, { limit });
        expect(ids).toEqual(all);
        expect(pages).toHaveLength(pageCount);
        expect(pages.slice(0, -1).every((size) => size === limit)).toBe(true);
      });

      it('serves 25 by default, with the keyset meta', async () => {
        const first = await listCategoriesCall(h.app, storeId, tokens.productsReader);
        expect(first.status).toBe(200);
        expect(first.body.data).toHaveLength(25);
        expect(first.body.meta).toEqual({
          request_id: first.headers['x-request-id'],
          has_more: true,
          limit: 25,
          next_cursor: expect.any(String),
          consistency: 'live_keyset',
        });
        expect(first.body.data.map((category: { id: number }) => category.id)).toEqual(all.slice(0, 25));
      });

      it('a tampered cursor, or one used on another store: 400 INVALID_CURSOR', async () => {
        const cursor = (await listCategoriesCall(h.app, storeId, tokens.categoriesReader, { limit: 10 })).body.meta.next_cursor as string;
        const [body = '', tag = ''] = cursor.split('.');
        const flipped = `${body.slice(0, -2)}${body.endsWith('A') ? 'B' : 'A'}${body.slice(-1)}.${tag}`;
        for (const bad of [flipped, `${body}.${tag.split('').reverse().join('')}`, 'garbage', `${cursor}x`]) {
          expectError(await listCategoriesCall(h.app, storeId, tokens.categoriesReader, { limit: 10, cursor: bad }), 400, 'INVALID_CURSOR');
        }
        const other = await freshStore('Other Store');
        expectError(await listCategoriesCall(h.app, other.storeId, other.tokens.categoriesReader, { limit: 10, cursor }), 400, 'INVALID_CURSOR');
      });

      // Last in this block: it moves the clock past the lifetime of the block's access tokens.
      it('a cursor expires 15 minutes after the first page: 400 CURSOR_EXPIRED (valid just before)', async () => {
        const first = await listCategoriesCall(h.app, storeId, tokens.categoriesReader, { limit: 10 });
        const cursor = first.body.meta.next_cursor as string;
        h.clock.advance(CURSOR_TTL_MS - 1);
        const second = await listCategoriesCall(h.app, storeId, await tokenWith(h, store, ['categories:read']), { limit: 10, cursor });
        expect(second.status).toBe(200);
        h.clock.advance(1);
        const reader = await tokenWith(h, store, ['categories:read']);
        // The second page's cursor counts from the first page too.
        expectError(await listCategoriesCall(h.app, storeId, reader, { limit: 10, cursor: second.body.meta.next_cursor }), 400, 'CURSOR_EXPIRED');
        expectError(await listCategoriesCall(h.app, storeId, reader, { limit: 10, cursor }), 400, 'CURSOR_EXPIRED');
      });
    });

    describe('search', () => {
      let storeId: string;
      let tokens: CategoryTokens;
      let rows: CategoryRow[];

      beforeAll(async () => {
        ({ storeId, tokens } = await freshStore());
        rows = [];
        for (const name of ['Oud oils', 'Perfumes', 'Royal OUD', 'Bakhoor', 'oud wood', '100% musk', 'Musk_white', 'دهن العود']) {
          rows.push(...(await seedCategories(h, storeId, 1, name)));
        }
      });

      const namesFound = async (search: string) =>
        ((await listCategoriesCall(h.app, storeId, tokens.categoriesReader, { search })).body.data as { name: string }[]).map((category) => category.name);

      it('finds the names that contain the text, in any case', async () => {
        expect(await namesFound('oud')).toEqual(['Oud oils 001', 'Royal OUD 001', 'oud wood 001']);
        expect(await namesFound('OUD W')).toEqual(['oud wood 001']);
        expect(await namesFound('العود')).toEqual(['دهن العود 001']);
        expect(await namesFound('nothing like it')).toEqual([]);
      });

      it('takes % and _ as plain characters', async () => {
        expect(await namesFound('0%')).toEqual(['100% musk 001']);
        expect(await namesFound('k_w')).toEqual(['Musk_white 001']);
        expect(await namesFound('_')).toEqual(['Musk_white 001']);
      });

      it('the cursor carries the search: pages follow it; with another search or none: 400 INVALID_CURSOR', async () => {
        const { ids } = await walkCategories(h.app, storeId, tokens.categoriesReader, { search: 'oud', limit: 1 });
        expect(ids).toEqual([rows[0]?.id, rows[2]?.id, rows[4]?.id]);
        const cursor = (await listCategoriesCall(h.app, storeId, tokens.categoriesReader, { search: 'oud', limit: 1 })).body.meta.next_cursor as string;
        for (const query of [{ search: 'musk' }, { search: 'OUD' }, {}] as Record<string, string>[]) {
          expectError(await listCategoriesCall(h.app, storeId, tokens.categoriesReader, { ...query, limit: 1, cursor }), 400, 'INVALID_CURSOR');
        }
      });
    });

    it('shows only the store’s own categories, each with its products_count', async () => {
      const { storeId, tokens } = await freshStore();
      const other = await freshStore('Musk House');
      const [perfumes, incense] = (await seedCategories(h, storeId, 2, 'Mine')) as [CategoryRow, CategoryRow];
      await seedCategories(h, other.storeId, 2, 'Theirs');
      await seedProducts(h, storeId, perfumes.id, 4);
      const page = await listCategoriesCall(h.app, storeId, tokens.categoriesReader);
      expect(page.body.data.map((category: { id: number; products_count: number }) => [category.id, category.products_count])).toEqual([
        [perfumes.id, 4],
        [incense.id, 0],
      ]);
      expect(page.body.meta).toMatchObject({ has_more: false, next_cursor: null });
    });

    it.each([
      ['limit 0', 400, 'VALIDATION_FAILED', { limit: 0 }],
      ['limit 101', 400, 'VALIDATION_FAILED', { limit: 101 }],
      ['a limit that is not a number', 400, 'VALIDATION_FAILED', { limit: 'ten' }],
      ['an empty search', 400, 'INVALID_FILTER', { search: '' }],
      ['a search over 100 characters', 400, 'INVALID_FILTER', { search: 's'.repeat(101) }],
      ['a cursor over 4096 characters', 400, 'VALIDATION_FAILED', { cursor: 'c'.repeat(4097) }],
      ['an unknown filter', 422, 'UNKNOWN_FIELD', { status: 'active' }],
    ])('%s: %i %s', async (_case, status, code, query) => {
      const { storeId, tokens } = await sharedStore();
      expectError(await listCategoriesCall(h.app, storeId, tokens.categoriesReader, query), status, code);
    });

    it('a search of exactly 100 characters is accepted', async () => {
      const { storeId, tokens } = await freshStore();
      const response = await listCategoriesCall(h.app, storeId, tokens.categoriesReader, { search: 's'.repeat(100) });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual([]);
    });
  });
});

/**
 * A rename locks the category, then its products; a product moved between categories touches the
 * categories before its own row is locked (domain/catalog/categories/changes): on PostgreSQL, where
 * writers run at once, the two wait for each other and never deadlock.
 */
describeOnPostgres('renames and product moves at once on PostgreSQL', (postgres) => {
  const h = suiteHarness(postgres);
  let second: Knex;

  beforeAll(async () => {
    second = await postgres.openAnother();
  });

  it('none deadlocks: each succeeds or names a category renamed meanwhile (422), and the store keeps its six products and two categories', async () => {
    const { store } = await createTestStore(h, 'Contended');
    const actor = (): Actor => ({ storeId: store.id, installationId: null, now: h.clock.now() });
    const perfumes = await createCategory(h.db, actor(), { name: 'Perfumes' });
    await createCategory(h.db, actor(), { name: 'Incense' });
    const products = [];
    for (let index = 0; index < 6; index += 1) {
      products.push(await createProduct(h.db, actor(), { name: `Oud ${index}`, product_kind: 'physical', category: 'Perfumes' }));
    }
    for (let round = 0; round < 4; round += 1) {
      h.clock.advance(1000);
      const writes = [
        updateCategory(second, actor(), perfumes.id, anyVersion, { name: `Perfumes ${round}` }),
        ...products.map((product, index) =>
          updateProductContent(index % 2 === 0 ? h.db : second, actor(), product.id, anyVersion, {
            category: (index + round) % 2 === 0 ? 'Incense' : `Perfumes ${round}`,
          }),
        ),
        updateCategory(h.db, actor(), perfumes.id, anyVersion, { description: `Round ${round}` }),
      ];
      const results = await Promise.allSettled(writes);
      // A move may name the category by its name of the round before the rename committed: 422, never a deadlock.
      const refusals = results.flatMap((result) => (result.status === 'rejected' ? [(result.reason as { code?: string }).code] : []));
      expect(refusals.filter((code) => code !== 'CATEGORY_NOT_FOUND')).toEqual([]);
    }
    const counts = await h.db('products').where({ store_id: store.id }).groupBy('category_id').select('category_id').count({ n: '*' });
    const categories = await h.db('categories').where({ store_id: store.id });
    const total = counts.reduce((sum, row) => sum + Number(row.n), 0);
    expect(total).toBe(6);
    expect(categories.map((category) => category.name).sort()).toEqual(['Incense', 'Perfumes 3']);
  });
});
