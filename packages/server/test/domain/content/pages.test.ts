import type request from 'supertest';
import type { PageRow, PageStatus, PublishedStatus } from '../../../src/domain/content/pages/row';
import { expectError } from '../../support/auth-steps';
import { ETAG } from '../../support/catalog-categories';
import { HUGE_ID, MALFORMED_IDS } from '../../support/catalog-fixtures';
import {
  deletePageCall,
  getPageCall,
  listPagesCall,
  type PageTokens,
  pageTokens,
  patchPage,
  patchPublication,
  postPage,
  seedPage,
  storedPages,
  walkPages,
} from '../../support/content-pages';
import { testDatabases } from '../../support/databases';
import { createTestStore, suiteHarness } from '../../support/harness';

const SHIPPING = {
  title: 'Shipping policy',
  slug: 'shipping-policy',
  body: '<h2>Delivery times</h2><p>Orders within Riyadh arrive in 1 to 2 working days; other cities in 3 to 5.</p>',
  excerpt: 'Delivery in 1 to 5 working days across Saudi Arabia.',
  seo_title: 'Shipping | Oud Store',
  seo_description: 'How and when your order arrives.',
};

const isoAt = (ms: number) => new Date(ms).toISOString();

describe.each(testDatabases())('pages on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  interface Shop {
    storeId: string;
    tokens: PageTokens;
  }

  /** A fresh store and its tokens: every test that changes pages works in its own store. */
  async function freshStore(name = 'Royal Oud'): Promise<Shop> {
    const store = await createTestStore(h, name);
    return { storeId: store.store.id, tokens: await pageTokens(h, store) };
  }

  let shared: Promise<Shop> | undefined;
  /** One store for the tests that only prove a refusal (each checks that its own request changed nothing). */
  const sharedStore = () => (shared ??= freshStore('Refusals'));

  const created = async ({ storeId, tokens }: Shop, body: object = SHIPPING): Promise<request.Response> => {
    const response = await postPage(h.app, storeId, tokens.writer, body);
    if (response.status !== 201) throw new Error(`create answered ${response.status}: ${JSON.stringify(response.body)}`);
    return response;
  };

  const stored = async (storeId: string, id: number): Promise<PageRow | undefined> => (await storedPages(h, storeId)).find((row) => row.id === id);

  const pageEventsOf = async (storeId: string) =>
    (await h.db('outbox_events').where({ store_id: storeId }).select('type')).filter((event: { type: string }) => event.type.startsWith('page'));

  describe('pages.create', () => {
    it('creates a draft from a title alone: 201, slug and excerpt null, an empty body, never published, version 1, its ETag', async () => {
      const shop = await freshStore();
      const response = await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'من نحن' });
      expect(response.status).toBe(201);
      const at = isoAt(h.clock.now());
      expect(response.body.data).toEqual({
        id: expect.any(Number),
        title: 'من نحن',
        slug: null,
        body: '',
        excerpt: null,
        status: 'draft',
        published_at: null,
        seo_title: null,
        seo_description: null,
        resource_version: 1,
        created_at: at,
        updated_at: at,
      });
      expect(response.headers.etag).toMatch(ETAG);
      expect(response.headers.etag).toMatch(/^"p1\.1\./);
      expect(response.headers['idempotent-replayed']).toBeUndefined();
      expect(response.body.meta.request_id).toBe(response.headers['x-request-id']);
      expect(response.body.execution.storeId).toBe(shop.storeId);

      const read = await getPageCall(h.app, shop.storeId, shop.tokens.reader, response.body.data.id);
      expect(read.status).toBe(200);
      expect(read.body.data).toEqual(response.body.data);
      expect(read.headers.etag).toBe(response.headers.etag);
    });

    it('stores every field of the body, and writes no event (the interface names no page event)', async () => {
      const shop = await freshStore();
      const response = await created(shop);
      expect(response.body.data).toMatchObject({ ...SHIPPING, status: 'draft', published_at: null, resource_version: 1 });
      expect(await pageEventsOf(shop.storeId)).toEqual([]);
    });

    it('stores and answers the body sanitised: scripts, event handlers and javascript: URLs are gone, the page’s markup stays', async () => {
      const shop = await freshStore();
      const body =
        '<h2 onclick="steal()">Returns</h2><script>alert(document.cookie)</script>' +
        '<p>Within <strong>14 days</strong>. <a href="javascript:alert(1)">Click</a> <a href="https://oud.example/returns" target="_blank">policy</a></p>' +
        '<img src=x onerror=alert(1)><iframe src="https://evil.example"></iframe>';
      const response = await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'Returns', body });
      expect(response.status).toBe(201);
      const clean =
        '<h2>Returns</h2><p>Within <strong>14 days</strong>. <a>Click</a> <a href="https://oud.example/returns" target="_blank" rel="noopener noreferrer">policy</a></p>';
      expect(response.body.data.body).toBe(clean);
      expect((await stored(shop.storeId, response.body.data.id))?.body).toBe(clean);
      expect((await getPageCall(h.app, shop.storeId, shop.tokens.reader, response.body.data.id)).body.data.body).toBe(clean);
    });

    it('stores the excerpt as plain text: tags removed, character references decoded', async () => {
      const shop = await freshStore();
      const response = await postPage(h.app, shop.storeId, shop.tokens.writer, {
        title: 'Returns',
        excerpt: 'Free returns <b>within 14 days</b> &amp; no questions<script>alert(1)</script>',
      });
      expect(response.body.data.excerpt).toBe('Free returns within 14 days & no questions');
    });

    it('a body of 50,000 characters is accepted; one whose sanitised form outgrows 50,000: 400 VALIDATION_FAILED on /body, nothing stored', async () => {
      const shop = await freshStore();
      const longest = `<p>${'a'.repeat(50_000 - 7)}</p>`;
      expect((await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'Long', body: longest })).body.data.body).toBe(longest);

      // 20,000 ampersands are 100,000 characters once escaped as &amp;.
      const response = await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'Grows', body: '&'.repeat(20_000) });
      expectError(response, 400, 'VALIDATION_FAILED');
      expect(response.body.error.details).toEqual([expect.objectContaining({ location: 'body', field: '/body' })]);
      expect((await storedPages(h, shop.storeId)).map((row) => row.title)).toEqual(['Long']);
    });

    it('replays the first response for the same key and body: the same page and ETag, Idempotent-Replayed: true, one row', async () => {
      const shop = await freshStore();
      const first = await postPage(h.app, shop.storeId, shop.tokens.writer, SHIPPING, 'create-shipping');
      const again = await postPage(h.app, shop.storeId, shop.tokens.writer, { ...SHIPPING }, 'create-shipping');
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      expect(again.headers.etag).toBe(first.headers.etag);
      expect(again.body.meta.request_id).not.toBe(first.body.meta.request_id);
      expect(await storedPages(h, shop.storeId)).toHaveLength(1);
    });

    it('the same key with another body: 422 IDEMPOTENCY_KEY_REUSED, nothing stored', async () => {
      const shop = await freshStore();
      await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'About us' }, 'reused-key');
      expectError(await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'Contact' }, 'reused-key'), 422, 'IDEMPOTENCY_KEY_REUSED');
      expect((await storedPages(h, shop.storeId)).map((row) => row.title)).toEqual(['About us']);
    });

    it('without Idempotency-Key: 400 IDEMPOTENCY_KEY_REQUIRED; a key over 128 characters: 400 VALIDATION_FAILED; nothing stored', async () => {
      const shop = await freshStore();
      expectError(await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'About us' }, null), 400, 'IDEMPOTENCY_KEY_REQUIRED');
      expectError(await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'About us' }, 'k'.repeat(129)), 400, 'VALIDATION_FAILED');
      expect(await storedPages(h, shop.storeId)).toHaveLength(0);
    });

    it('a slug another page of the store has: 409 SLUG_TAKEN naming it, nothing stored; another store, or a category of the store, may use it', async () => {
      const shop = await freshStore();
      const holder = await created(shop);
      const taken = await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'Shipping again', slug: SHIPPING.slug });
      expectError(taken, 409, 'SLUG_TAKEN');
      expect(taken.body.error.details).toEqual([
        expect.objectContaining({ location: 'body', field: '/slug', message: expect.stringContaining(`page ${holder.body.data.id}`) }),
      ]);
      expect(await storedPages(h, shop.storeId)).toHaveLength(1);
      // Pages without a slug are many.
      await created(shop, { title: 'No slug 1' });
      await created(shop, { title: 'No slug 2' });

      const other = await freshStore('Musk House');
      expect((await postPage(h.app, other.storeId, other.tokens.writer, SHIPPING)).status).toBe(201);
      await h.db('categories').insert({ store_id: shop.storeId, name: 'Returns', name_key: 'returns', slug: 'returns', created_at: 0, updated_at: 0 });
      expect((await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'Returns', slug: 'returns' })).status).toBe(201);
    });

    it('concurrent creates of one slug under different keys: exactly one 201, the others 409 SLUG_TAKEN, one row', async () => {
      const shop = await freshStore();
      const responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) => postPage(h.app, shop.storeId, shop.tokens.writer, { title: `Shipping ${i}`, slug: 'shipping' })),
      );
      expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
      for (const response of responses.filter((r) => r.status !== 201)) expectError(response, 409, 'SLUG_TAKEN');
      expect(await storedPages(h, shop.storeId)).toHaveLength(1);
    });

    it('a request over 65,536 bytes: 413 PAYLOAD_TOO_LARGE, nothing stored', async () => {
      const { storeId, tokens } = await sharedStore();
      const before = (await storedPages(h, storeId)).length;
      expectError(await postPage(h.app, storeId, tokens.writer, { title: 'Big', body: 'b'.repeat(70_000) }), 413, 'PAYLOAD_TOO_LARGE');
      expect(await storedPages(h, storeId)).toHaveLength(before);
    });

    it.each([
      ['no title', 400, 'VALIDATION_FAILED', {}],
      ['an empty title', 400, 'VALIDATION_FAILED', { title: '' }],
      ['a title over 200 characters', 400, 'VALIDATION_FAILED', { title: 't'.repeat(201) }],
      ['a title that is a number', 400, 'VALIDATION_FAILED', { title: 42 }],
      ['a title with U+0000', 400, 'VALIDATION_FAILED', { title: 'About\u0000' }],
      ['a slug that is not lower-case words', 400, 'VALIDATION_FAILED', { title: 'About', slug: 'About Us' }],
      ['a null slug', 400, 'VALIDATION_FAILED', { title: 'About', slug: null }],
      ['a body over 50,000 characters', 400, 'VALIDATION_FAILED', { title: 'About', body: 'b'.repeat(50_001) }],
      ['a null body', 400, 'VALIDATION_FAILED', { title: 'About', body: null }],
      ['an excerpt over 500 characters', 400, 'VALIDATION_FAILED', { title: 'About', excerpt: 'e'.repeat(501) }],
      ['a seo_title over 255 characters', 400, 'VALIDATION_FAILED', { title: 'About', seo_title: 's'.repeat(256) }],
      ['a seo_description over 500 characters', 400, 'VALIDATION_FAILED', { title: 'About', seo_description: 's'.repeat(501) }],
      ['a body that is an array', 400, 'VALIDATION_FAILED', [{ title: 'About' }]],
      ['a status (pages start draft)', 422, 'UNKNOWN_FIELD', { title: 'About', status: 'published' }],
      ['a read-only field', 422, 'UNKNOWN_FIELD', { title: 'About', published_at: '2026-11-01T00:00:00Z' }],
      ['an unknown field', 422, 'UNKNOWN_FIELD', { title: 'About', colour: 'gold' }],
    ])('%s: %i %s and nothing stored; the key stays free', async (badCase, status, code, body) => {
      const { storeId, tokens } = await sharedStore();
      const before = (await storedPages(h, storeId)).length;
      expectError(await postPage(h.app, storeId, tokens.writer, body, `bad-body ${badCase}`), status, code);
      expect(await storedPages(h, storeId)).toHaveLength(before);
      const valid = await postPage(h.app, storeId, tokens.writer, { title: `Valid after ${badCase}` }, `bad-body ${badCase}`);
      expect(valid.status).toBe(201);
      expect(valid.headers['idempotent-replayed']).toBeUndefined();
    });
  });

  describe('pages.get', () => {
    it('answers a page in every status', async () => {
      const shop = await freshStore();
      for (const status of [undefined, 'published', 'hidden'] as const) {
        const page = await seedPage(h, shop.storeId, { title: `Page ${status ?? 'draft'}` }, status);
        const response = await getPageCall(h.app, shop.storeId, shop.tokens.reader, page.id);
        expect(response.status).toBe(200);
        expect(response.body.data.status).toBe(status ?? 'draft');
      }
    });

    it('an unknown id, an id past the id range, or another store’s page: 404 NOT_FOUND', async () => {
      const shop = await freshStore();
      const other = await freshStore('Musk House');
      const foreign = await created(other);
      for (const id of [String(foreign.body.data.id), '2000000000', HUGE_ID]) {
        expectError(await getPageCall(h.app, shop.storeId, shop.tokens.reader, id), 404, 'NOT_FOUND');
      }
    });

    it.each([...MALFORMED_IDS, 'abc', '1.5'])('a malformed id %p: 400 VALIDATION_FAILED', async (id) => {
      const { storeId, tokens } = await sharedStore();
      expectError(await getPageCall(h.app, storeId, tokens.reader, id), 400, 'VALIDATION_FAILED');
    });
  });

  describe('scopes and stores', () => {
    let shop: Shop;
    let page: number;
    let etag: string;
    let outsider: string;

    beforeAll(async () => {
      shop = await freshStore();
      const response = await created(shop);
      page = response.body.data.id;
      etag = response.headers.etag as string;
      outsider = (await freshStore('Musk House')).tokens.publisher;
    });

    const unchanged = async () => expect(await stored(shop.storeId, page)).toMatchObject({ title: SHIPPING.title, status: 'draft', resource_version: 1 });

    it.each(['reader', 'writer', 'publisher', 'deleter'] as const)('list and get work with %s (pages:read)', async (who) => {
      expect((await listPagesCall(h.app, shop.storeId, shop.tokens[who])).status).toBe(200);
      expect((await getPageCall(h.app, shop.storeId, shop.tokens[who], page)).status).toBe(200);
    });

    it('list and get without pages:read: 403 INSUFFICIENT_SCOPE naming it', async () => {
      for (const response of [
        await listPagesCall(h.app, shop.storeId, shop.tokens.unrelated),
        await getPageCall(h.app, shop.storeId, shop.tokens.unrelated, page),
      ]) {
        expectError(response, 403, 'INSUFFICIENT_SCOPE');
        expect(response.body.error.required_scopes).toEqual(['pages:read']);
      }
    });

    it.each(['reader', 'unrelated'] as const)('create and update need pages:write: %s gets 403 and nothing changes', async (who) => {
      expectError(await postPage(h.app, shop.storeId, shop.tokens[who], { title: 'About us' }), 403, 'INSUFFICIENT_SCOPE');
      expectError(await patchPage(h.app, shop.storeId, shop.tokens[who], page, { title: 'Renamed' }), 403, 'INSUFFICIENT_SCOPE');
      expect(await storedPages(h, shop.storeId)).toHaveLength(1);
      await unchanged();
    });

    it.each(['reader', 'writer', 'deleter'] as const)('publication needs pages.publish:write: %s gets 403 and nothing changes', async (who) => {
      const response = await patchPublication(h.app, shop.storeId, shop.tokens[who], page, { status: 'published' });
      expectError(response, 403, 'INSUFFICIENT_SCOPE');
      expect(response.body.error.required_scopes).toEqual(['pages.publish:write']);
      await unchanged();
    });

    it.each(['reader', 'writer', 'publisher'] as const)('delete needs pages.delete:write: %s gets 403 and the page stays', async (who) => {
      const response = await deletePageCall(h.app, shop.storeId, shop.tokens[who], page);
      expectError(response, 403, 'INSUFFICIENT_SCOPE');
      expect(response.body.error.required_scopes).toEqual(['pages.delete:write']);
      await unchanged();
    });

    it('another store’s token: 404 STORE_NOT_FOUND on every operation, and nothing changes', async () => {
      const calls = [
        listPagesCall(h.app, shop.storeId, outsider),
        getPageCall(h.app, shop.storeId, outsider, page),
        postPage(h.app, shop.storeId, outsider, { title: 'Stolen' }),
        patchPage(h.app, shop.storeId, outsider, page, { title: 'Stolen' }, etag),
        patchPublication(h.app, shop.storeId, outsider, page, { status: 'published' }, etag),
        deletePageCall(h.app, shop.storeId, outsider, page, etag),
      ];
      for (const response of await Promise.all(calls)) expectError(response, 404, 'STORE_NOT_FOUND');
      expect(await storedPages(h, shop.storeId)).toHaveLength(1);
      await unchanged();
    });
  });

  describe('pages.update', () => {
    it('without If-Match applies the changes: 200, resource_version + 1, a new ETag, updated_at moves; status and published_at stay', async () => {
      const shop = await freshStore();
      const page = await seedPage(h, shop.storeId, SHIPPING, 'published');
      const publishedAt = isoAt(Number(page.published_at));
      const before = await getPageCall(h.app, shop.storeId, shop.tokens.reader, page.id);
      h.clock.advance(60_000);
      const changes = { title: 'Shipping and delivery', seo_title: 'Shipping and delivery | Oud Store' };
      const updated = await patchPage(h.app, shop.storeId, shop.tokens.writer, page.id, changes);
      expect(updated.status).toBe(200);
      expect(updated.body.data).toEqual({
        ...before.body.data,
        ...changes,
        status: 'published',
        published_at: publishedAt,
        resource_version: page.resource_version + 1,
        updated_at: isoAt(h.clock.now()),
      });
      expect(updated.headers.etag).toMatch(ETAG);
      expect(updated.headers.etag).not.toBe(before.headers.etag);
      expect((await getPageCall(h.app, shop.storeId, shop.tokens.reader, page.id)).headers.etag).toBe(updated.headers.etag);
      expect(await pageEventsOf(shop.storeId)).toEqual([]);
    });

    it('null clears slug, excerpt and the SEO fields; the freed slug can be taken by another page', async () => {
      const shop = await freshStore();
      const page = await created(shop);
      const cleared = await patchPage(h.app, shop.storeId, shop.tokens.writer, page.body.data.id, {
        slug: null,
        excerpt: null,
        seo_title: null,
        seo_description: null,
      });
      expect(cleared.body.data).toMatchObject({
        title: SHIPPING.title,
        body: SHIPPING.body,
        slug: null,
        excerpt: null,
        seo_title: null,
        seo_description: null,
      });
      expect((await postPage(h.app, shop.storeId, shop.tokens.writer, { title: 'New shipping', slug: SHIPPING.slug })).status).toBe(201);
    });

    it('sanitises a new body and makes a new excerpt plain text', async () => {
      const shop = await freshStore();
      const page = await created(shop);
      const updated = await patchPage(h.app, shop.storeId, shop.tokens.writer, page.body.data.id, {
        body: '<p style="color:red" onmouseover="x()">Now <em>faster</em></p><svg onload=alert(1)></svg><a href="&#106;avascript:alert(1)">x</a>',
        excerpt: '<i>Faster</i> delivery',
      });
      expect(updated.body.data).toMatchObject({ body: '<p>Now <em>faster</em></p><a>x</a>', excerpt: 'Faster delivery' });
      expect(await stored(shop.storeId, page.body.data.id)).toMatchObject({ body: '<p>Now <em>faster</em></p><a>x</a>', excerpt: 'Faster delivery' });
    });

    it('with the current ETag in If-Match: applied; with a stale one: 412 PRECONDITION_FAILED with the current ETag, nothing changes', async () => {
      const shop = await freshStore();
      const page = await created(shop);
      const first = await patchPage(h.app, shop.storeId, shop.tokens.writer, page.body.data.id, { title: 'First' }, page.headers.etag);
      expect(first.status).toBe(200);
      expect(first.headers.etag).toMatch(/^"p1\.2\./);

      const stale = await patchPage(h.app, shop.storeId, shop.tokens.writer, page.body.data.id, { title: 'Second' }, page.headers.etag);
      expectError(stale, 412, 'PRECONDITION_FAILED');
      expect(stale.body.error.current_etag).toBe(first.headers.etag);
      expect(stale.headers.etag).toBe(first.headers.etag);
      expect(await stored(shop.storeId, page.body.data.id)).toMatchObject({ title: 'First', resource_version: 2 });
    });

    it('an If-Match that names another page, another store’s page or a forged tag: 412; one not of the ETag form: 400 VALIDATION_FAILED', async () => {
      const shop = await freshStore();
      const other = await freshStore('Musk House');
      const target = await created(shop);
      const sibling = await created(shop, { title: 'About us' });
      const foreign = await created(other);
      for (const ifMatch of [sibling.headers.etag, foreign.headers.etag, `"p1.1.${'A'.repeat(43)}"`]) {
        const response = await patchPage(h.app, shop.storeId, shop.tokens.writer, target.body.data.id, { title: 'Renamed' }, ifMatch);
        expectError(response, 412, 'PRECONDITION_FAILED');
        expect(response.body.error.current_etag).toBe(target.headers.etag);
      }
      for (const ifMatch of [`W/${target.headers.etag}`, '*', 'not-a-tag']) {
        expectError(await patchPage(h.app, shop.storeId, shop.tokens.writer, target.body.data.id, { title: 'Renamed' }, ifMatch), 400, 'VALIDATION_FAILED');
      }
      expect((await storedPages(h, shop.storeId)).map((row) => [row.title, row.resource_version])).toEqual([
        [SHIPPING.title, 1],
        ['About us', 1],
      ]);
    });

    it('two concurrent updates with the same If-Match: exactly one 200 and one 412', async () => {
      const shop = await freshStore();
      const page = await created(shop);
      const responses = await Promise.all(
        ['Left', 'Right'].map((title) => patchPage(h.app, shop.storeId, shop.tokens.writer, page.body.data.id, { title }, page.headers.etag)),
      );
      expect(responses.map((response) => response.status).sort()).toEqual([200, 412]);
      const winner = responses.find((response) => response.status === 200) as request.Response;
      expect(await stored(shop.storeId, page.body.data.id)).toMatchObject({ title: winner.body.data.title, resource_version: 2 });
    });

    it('its own slug again is fine; another page’s slug: 409 SLUG_TAKEN and nothing changes', async () => {
      const shop = await freshStore();
      const shipping = await created(shop);
      const about = await created(shop, { title: 'About us', slug: 'about-us' });
      expect((await patchPage(h.app, shop.storeId, shop.tokens.writer, shipping.body.data.id, { slug: SHIPPING.slug })).status).toBe(200);
      expectError(await patchPage(h.app, shop.storeId, shop.tokens.writer, about.body.data.id, { slug: SHIPPING.slug }), 409, 'SLUG_TAKEN');
      expect(await stored(shop.storeId, about.body.data.id)).toMatchObject({ slug: 'about-us', resource_version: 1 });
    });

    it('an unknown id, an id past the id range, or another store’s page: 404 NOT_FOUND, and the other store’s page is untouched', async () => {
      const shop = await freshStore();
      const other = await freshStore('Musk House');
      const foreign = await created(other);
      for (const id of [String(foreign.body.data.id), '2000000000', HUGE_ID]) {
        expectError(await patchPage(h.app, shop.storeId, shop.tokens.writer, id, { title: 'Stolen' }), 404, 'NOT_FOUND');
      }
      expect(await stored(other.storeId, foreign.body.data.id)).toMatchObject({ title: SHIPPING.title, resource_version: 1 });
    });

    it.each([
      ['an empty body', 400, 'VALIDATION_FAILED', {}],
      ['an empty title', 400, 'VALIDATION_FAILED', { title: '' }],
      ['a null title', 400, 'VALIDATION_FAILED', { title: null }],
      ['a null body', 400, 'VALIDATION_FAILED', { body: null }],
      ['a body over 50,000 characters', 400, 'VALIDATION_FAILED', { body: 'b'.repeat(50_001) }],
      ['a body that grows past 50,000 characters when sanitised', 400, 'VALIDATION_FAILED', { body: '<'.repeat(20_000) }],
      ['a slug that is not lower-case words', 400, 'VALIDATION_FAILED', { slug: 'Shipping Policy' }],
      ['a status (publication has its own operation)', 422, 'UNKNOWN_FIELD', { status: 'published' }],
      ['a read-only field', 422, 'UNKNOWN_FIELD', { resource_version: 7 }],
      ['an unknown field', 422, 'UNKNOWN_FIELD', { title: 'About', colour: 'gold' }],
    ])('%s: %i %s and nothing changes', async (badCase, status, code, body) => {
      const shop = await sharedStore();
      const page = await created(shop, { title: `Before ${badCase}` });
      expectError(await patchPage(h.app, shop.storeId, shop.tokens.writer, page.body.data.id, body), status, code);
      expect(await stored(shop.storeId, page.body.data.id)).toMatchObject({ title: `Before ${badCase}`, body: '', status: 'draft', resource_version: 1 });
    });
  });

  describe('pages.publication', () => {
    /** A page brought to `from` through the API, its ETag and when it was first published (null while never). */
    async function pageIn(shop: Shop, from: PageStatus): Promise<{ id: number; etag: string; publishedAt: string | null }> {
      const page = await created(shop, { title: `Was ${from}` });
      let etag = page.headers.etag as string;
      if (from !== 'draft') {
        h.clock.advance(1_000);
        etag = (await patchPublication(h.app, shop.storeId, shop.tokens.publisher, page.body.data.id, { status: 'published' })).headers.etag as string;
      }
      if (from === 'hidden')
        etag = (await patchPublication(h.app, shop.storeId, shop.tokens.publisher, page.body.data.id, { status: 'hidden' })).headers.etag as string;
      const current = await getPageCall(h.app, shop.storeId, shop.tokens.reader, page.body.data.id);
      expect(current.body.data.status).toBe(from);
      return { id: page.body.data.id, etag, publishedAt: current.body.data.published_at };
    }

    it.each([
      ['draft', 'published', 'sets published_at to now'],
      ['draft', 'hidden', 'leaves published_at null (the page was never shown)'],
      ['published', 'hidden', 'keeps published_at'],
      ['hidden', 'published', 'keeps the first published_at'],
    ] as [PageStatus, PublishedStatus, string][])('%s → %s: 200, the new status, resource_version + 1, a new ETag; it %s', async (from, to) => {
      const shop = await freshStore();
      const before = await pageIn(shop, from);
      const version = (await stored(shop.storeId, before.id))?.resource_version as number;
      h.clock.advance(60_000);
      const response = await patchPublication(h.app, shop.storeId, shop.tokens.publisher, before.id, { status: to });
      expect(response.status).toBe(200);
      const now = isoAt(h.clock.now());
      const publishedAt = from === 'draft' ? (to === 'published' ? now : null) : before.publishedAt;
      expect(response.body.data).toMatchObject({ status: to, published_at: publishedAt, resource_version: version + 1, updated_at: now });
      expect(response.headers.etag).toMatch(new RegExp(`^"p1\\.${version + 1}\\.`));
      expect(response.headers.etag).not.toBe(before.etag);
      expect(await stored(shop.storeId, before.id)).toMatchObject({ status: to, resource_version: version + 1 });
    });

    it.each(['published', 'hidden'] as PublishedStatus[])('%s → %s changes nothing: 200 with the page as it was, same version, same ETag', async (status) => {
      const shop = await freshStore();
      const before = await pageIn(shop, status);
      const row = await stored(shop.storeId, before.id);
      h.clock.advance(60_000);
      const response = await patchPublication(h.app, shop.storeId, shop.tokens.publisher, before.id, { status }, before.etag);
      expect(response.status).toBe(200);
      expect(response.headers.etag).toBe(before.etag);
      expect(response.body.data).toMatchObject({ status, published_at: before.publishedAt, resource_version: row?.resource_version });
      expect(await stored(shop.storeId, before.id)).toEqual(row);
    });

    it.each(['draft', 'published', 'hidden'] as PageStatus[])('%s → draft is refused: 400 VALIDATION_FAILED on /status, nothing changes', async (from) => {
      const shop = await sharedStore();
      const before = await pageIn(shop, from);
      const row = await stored(shop.storeId, before.id);
      const response = await patchPublication(h.app, shop.storeId, shop.tokens.publisher, before.id, { status: 'draft' });
      expectError(response, 400, 'VALIDATION_FAILED');
      expect(response.body.error.details).toEqual([expect.objectContaining({ location: 'body', field: '/status' })]);
      expect(await stored(shop.storeId, before.id)).toEqual(row);
    });

    it('publication writes nothing else of the page, and no event', async () => {
      const shop = await freshStore();
      const page = await created(shop);
      const published = await patchPublication(h.app, shop.storeId, shop.tokens.publisher, page.body.data.id, { status: 'published' });
      const { status, published_at, resource_version, updated_at, ...content } = published.body.data;
      const { status: _s, published_at: _p, resource_version: _r, updated_at: _u, ...before } = page.body.data;
      expect(content).toEqual(before);
      expect(await pageEventsOf(shop.storeId)).toEqual([]);
    });

    it('If-Match is honoured when sent: the current ETag publishes; a stale one is 412 with the current ETag, also for a no-op', async () => {
      const shop = await freshStore();
      const page = await created(shop);
      const published = await patchPublication(h.app, shop.storeId, shop.tokens.publisher, page.body.data.id, { status: 'published' }, page.headers.etag);
      expect(published.status).toBe(200);
      for (const status of ['hidden', 'published']) {
        const stale = await patchPublication(h.app, shop.storeId, shop.tokens.publisher, page.body.data.id, { status }, page.headers.etag);
        expectError(stale, 412, 'PRECONDITION_FAILED');
        expect(stale.body.error.current_etag).toBe(published.headers.etag);
      }
      expect(await stored(shop.storeId, page.body.data.id)).toMatchObject({ status: 'published', resource_version: 2 });
    });

    it.each([
      ['no status', 400, 'VALIDATION_FAILED', {}],
      ['an unknown status', 400, 'VALIDATION_FAILED', { status: 'archived' }],
      ['a null status', 400, 'VALIDATION_FAILED', { status: null }],
      ['another field', 422, 'UNKNOWN_FIELD', { status: 'published', title: 'Sneaked in' }],
    ])('%s: %i %s and nothing changes', async (_case, status, code, body) => {
      const shop = await sharedStore();
      const page = await created(shop, { title: 'Unmoved' });
      expectError(await patchPublication(h.app, shop.storeId, shop.tokens.publisher, page.body.data.id, body), status, code);
      expect(await stored(shop.storeId, page.body.data.id)).toMatchObject({ title: 'Unmoved', status: 'draft', resource_version: 1 });
    });

    it('an unknown id, an id past the id range, or another store’s page: 404 NOT_FOUND, the other store’s page stays a draft', async () => {
      const shop = await freshStore();
      const other = await freshStore('Musk House');
      const foreign = await created(other);
      for (const id of [String(foreign.body.data.id), '2000000000', HUGE_ID]) {
        expectError(await patchPublication(h.app, shop.storeId, shop.tokens.publisher, id, { status: 'published' }), 404, 'NOT_FOUND');
      }
      expect(await stored(other.storeId, foreign.body.data.id)).toMatchObject({ status: 'draft', published_at: null });
    });
  });

  describe('pages.delete', () => {
    it.each([undefined, 'published', 'hidden'] as const)(
      'deletes a page (%s) for good: 200 {id, deleted: true}; then every operation on it is 404',
      async (status) => {
        const shop = await freshStore();
        const page = await seedPage(h, shop.storeId, SHIPPING, status);
        const response = await deletePageCall(h.app, shop.storeId, shop.tokens.deleter, page.id);
        expect(response.status).toBe(200);
        expect(response.body.data).toEqual({ id: page.id, deleted: true });
        expect(response.body.meta.request_id).toBe(response.headers['x-request-id']);
        expect(response.headers.etag).toBeUndefined();
        expect(await storedPages(h, shop.storeId)).toEqual([]);

        expectError(await getPageCall(h.app, shop.storeId, shop.tokens.reader, page.id), 404, 'NOT_FOUND');
        expectError(await patchPage(h.app, shop.storeId, shop.tokens.writer, page.id, { title: 'Back' }), 404, 'NOT_FOUND');
        expectError(await patchPublication(h.app, shop.storeId, shop.tokens.publisher, page.id, { status: 'published' }), 404, 'NOT_FOUND');
        expectError(await deletePageCall(h.app, shop.storeId, shop.tokens.deleter, page.id), 404, 'NOT_FOUND');
        expect((await listPagesCall(h.app, shop.storeId, shop.tokens.reader)).body.data).toEqual([]);
        expect(await pageEventsOf(shop.storeId)).toEqual([]);
      },
    );

    it('frees the slug: a new page may take it', async () => {
      const shop = await freshStore();
      const page = await created(shop);
      expect((await deletePageCall(h.app, shop.storeId, shop.tokens.deleter, page.body.data.id)).status).toBe(200);
      expect((await postPage(h.app, shop.storeId, shop.tokens.writer, SHIPPING)).status).toBe(201);
    });

    it('If-Match is honoured when sent: a stale ETag is 412 and the page stays; the current one deletes', async () => {
      const shop = await freshStore();
      const page = await created(shop);
      const renamed = await patchPage(h.app, shop.storeId, shop.tokens.writer, page.body.data.id, { title: 'Renamed' });
      const stale = await deletePageCall(h.app, shop.storeId, shop.tokens.deleter, page.body.data.id, page.headers.etag);
      expectError(stale, 412, 'PRECONDITION_FAILED');
      expect(stale.body.error.current_etag).toBe(renamed.headers.etag);
      expect(await storedPages(h, shop.storeId)).toHaveLength(1);
      expectError(await deletePageCall(h.app, shop.storeId, shop.tokens.deleter, page.body.data.id, 'not-a-tag'), 400, 'VALIDATION_FAILED');
      expect((await deletePageCall(h.app, shop.storeId, shop.tokens.deleter, page.body.data.id, renamed.headers.etag)).status).toBe(200);
      expect(await storedPages(h, shop.storeId)).toEqual([]);
    });

    it('an unknown id, an id past the id range, or another store’s page: 404 NOT_FOUND, and the other store’s page stays', async () => {
      const shop = await freshStore();
      const other = await freshStore('Musk House');
      const foreign = await created(other);
      for (const id of [String(foreign.body.data.id), '2000000000', HUGE_ID]) {
        expectError(await deletePageCall(h.app, shop.storeId, shop.tokens.deleter, id), 404, 'NOT_FOUND');
      }
      expect(await storedPages(h, other.storeId)).toHaveLength(1);
    });

    it.each([...MALFORMED_IDS, 'abc'])('a malformed id %p: 400 VALIDATION_FAILED', async (id) => {
      const { storeId, tokens } = await sharedStore();
      expectError(await deletePageCall(h.app, storeId, tokens.deleter, id), 400, 'VALIDATION_FAILED');
    });
  });

  describe('pages.list', () => {
    let shop: Shop;
    /** Ids by status, in creation order. */
    const ids: Record<PageStatus, number[]> = { draft: [], published: [], hidden: [] };
    let all: number[];

    beforeAll(async () => {
      shop = await freshStore();
      const statuses: (PublishedStatus | undefined)[] = [undefined, 'published', 'hidden'];
      for (let i = 0; i < 60; i += 1) {
        const status = statuses[i % 3];
        const page = await seedPage(h, shop.storeId, { title: `Page ${String(i).padStart(2, '0')}` }, status);
        ids[status ?? 'draft'].push(page.id);
      }
      all = [...ids.draft, ...ids.published, ...ids.hidden].sort((a, b) => a - b);
      // Another store's pages interleave with these ids and never show up.
      const other = await createTestStore(h, 'Musk House');
      for (let i = 0; i < 3; i += 1) await seedPage(h, other.store.id, { title: `Page ${i}` });
    });

    it.each([
      [1, 60],
      [25, 3],
      [100, 1],
    ])('with limit %d walks every page of the store (drafts and hidden ones included) once, by ascending id, in %d pages', async (limit, count) => {
      const { ids: served, sizes } = await walkPages(h.app, shop.storeId, shop.tokens.reader, { limit });
      expect(served).toEqual(all);
      expect(sizes).toHaveLength(count);
    });

    it('serves 25 by default, each page in the spec’s form, with the keyset meta', async () => {
      const first = await listPagesCall(h.app, shop.storeId, shop.tokens.reader);
      expect(first.status).toBe(200);
      expect(first.body.data.map((page: { id: number }) => page.id)).toEqual(all.slice(0, 25));
      expect(first.body.meta).toEqual({
        request_id: first.headers['x-request-id'],
        has_more: true,
        limit: 25,
        next_cursor: expect.any(String),
        consistency: 'live_keyset',
      });
      const got = await getPageCall(h.app, shop.storeId, shop.tokens.reader, all[0] as number);
      expect(first.body.data[0]).toEqual(got.body.data);
    });

    it.each(['draft', 'published', 'hidden'] as PageStatus[])('status=%s: only those pages, paged', async (status) => {
      expect((await walkPages(h.app, shop.storeId, shop.tokens.reader, { status, limit: 7 })).ids).toEqual(ids[status]);
    });

    it('search finds titles containing the text in any case, % and _ taken as plain characters; it combines with status', async () => {
      const store = await freshStore();
      const titles = ['Shipping policy', 'Return POLICY', 'About us', 'سياسة الخصوصية', '100% satisfaction', 'policy_v2'];
      const pages = [];
      for (const title of titles) pages.push(await seedPage(h, store.storeId, { title }, title === 'Return POLICY' ? 'published' : undefined));
      const found = async (query: Record<string, string>) =>
        ((await listPagesCall(h.app, store.storeId, store.tokens.reader, query)).body.data as { title: string }[]).map((page) => page.title);
      expect(await found({ search: 'policy' })).toEqual(['Shipping policy', 'Return POLICY', 'policy_v2']);
      expect(await found({ search: 'POLICY', status: 'published' })).toEqual(['Return POLICY']);
      expect(await found({ search: 'policy', status: 'hidden' })).toEqual([]);
      expect(await found({ search: 'الخصوصية' })).toEqual(['سياسة الخصوصية']);
      expect(await found({ search: '0%' })).toEqual(['100% satisfaction']);
      expect(await found({ search: '_' })).toEqual(['policy_v2']);
      expect(await found({ search: 'nothing like it' })).toEqual([]);
    });

    it('the cursor carries the filters: pages follow them; with other filters or none: 400 INVALID_CURSOR', async () => {
      const cursor = (await listPagesCall(h.app, shop.storeId, shop.tokens.reader, { status: 'hidden', search: 'page', limit: 5 })).body.meta
        .next_cursor as string;
      const next = await listPagesCall(h.app, shop.storeId, shop.tokens.reader, { status: 'hidden', search: 'page', limit: 5, cursor });
      expect(next.body.data.map((page: { id: number }) => page.id)).toEqual(ids.hidden.slice(5, 10));
      for (const query of [{ status: 'draft', search: 'page' }, { status: 'hidden' }, { search: 'page' }, {}] as Record<string, string>[]) {
        expectError(await listPagesCall(h.app, shop.storeId, shop.tokens.reader, { ...query, limit: 5, cursor }), 400, 'INVALID_CURSOR');
      }
      const other = await freshStore('Other');
      expectError(
        await listPagesCall(h.app, other.storeId, other.tokens.reader, { status: 'hidden', search: 'page', limit: 5, cursor }),
        400,
        'INVALID_CURSOR',
      );
    });

    it.each([
      ['limit 0', 400, 'VALIDATION_FAILED', { limit: 0 }],
      ['limit 101', 400, 'VALIDATION_FAILED', { limit: 101 }],
      ['an empty search', 400, 'INVALID_FILTER', { search: '' }],
      ['a search over 100 characters', 400, 'INVALID_FILTER', { search: 's'.repeat(101) }],
      ['an unknown status', 400, 'INVALID_FILTER', { status: 'deleted' }],
      ['a garbage cursor', 400, 'INVALID_CURSOR', { cursor: 'garbage' }],
      ['an unknown filter', 422, 'UNKNOWN_FIELD', { slug: 'shipping-policy' }],
    ])('%s: %i %s', async (_case, status, code, query) => {
      expectError(await listPagesCall(h.app, shop.storeId, shop.tokens.reader, query), status, code);
    });
  });
});
