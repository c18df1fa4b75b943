import request from 'supertest';
import { createCategory } from '../../src/domain/catalog/categories/changes';
import { expectError } from '../support/auth-steps';
import { authorizeQuery, authorizeUrl } from '../support/browser';
import { insertProduct, type StoreApi, storeWithFullAccess } from '../support/catalog-fixtures';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, type StoreFixture, suiteHarness } from '../support/harness';
import { walkList } from '../support/list-walk';

interface Named {
  id: number;
  name: string;
}

interface Page {
  data: Named[];
  meta: { next_cursor: string | null };
}

const PRODUCT_NAMES = ['Oud oil', 'Oud+oil', 'Rose & Amber', 'key=value blend', '100% pure musk', 'دهن العود الملكي', 'Crème brûlée', 'a*b (c)!'] as const;
const CATEGORY_NAMES = ['Oud & Musk', 'Oud+Musk', 'Oud Musk', '50% off = deal', 'عطور شرقية'] as const;
/** A category name holding every character with a meaning in a query string. */
const AWKWARD_CATEGORY = 'Oils & Musks + Co = 100%';

describe.each(testDatabases())('query strings as clients send them (application/x-www-form-urlencoded) on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;
  let api: StoreApi;

  beforeAll(async () => {
    ({ store, api } = await storeWithFullAccess(h));
    const awkward = await createCategory(h.db, { storeId: api.storeId, installationId: null, now: h.clock.now() }, { name: AWKWARD_CATEGORY });
    for (const name of PRODUCT_NAMES) await insertProduct(h.db, api.storeId, { name, category_id: name === 'Rose & Amber' ? awkward.id : null });
    for (const name of CATEGORY_NAMES) await createCategory(h.db, { storeId: api.storeId, installationId: null, now: h.clock.now() }, { name });
  });

  /** The names on one page of a list, fetched with exactly this query string. */
  async function namesOf(list: 'products' | 'categories', query: string): Promise<string[]> {
    const response = await api.get(`${list}?${query}`);
    expect({ status: response.status, error: response.body.error }).toEqual({ status: 200, error: undefined });
    return (response.body as Page).data.map((item) => item.name);
  }

  describe('products.list', () => {
    it.each([
      ['oud oil', ['Oud oil']],
      ['oud+oil', ['Oud+oil']],
      ['rose & amber', ['Rose & Amber']],
      ['key=value', ['key=value blend']],
      ['100%', ['100% pure musk']],
      ['العود', ['دهن العود الملكي']],
      ['brûlée', ['Crème brûlée']],
      ['*b (c)!', ['a*b (c)!']],
    ])('search %p built by URLSearchParams finds %p', async (search, expected) => {
      expect(await namesOf('products', new URLSearchParams({ search }).toString())).toEqual(expected);
    });

    it.each([
      ['search=oud+oil', ['Oud oil']],
      ['search=oud%20oil', ['Oud oil']],
      ['search=oud%2Boil', ['Oud+oil']],
      ['search=Oud+oil&status=inactive', ['Oud oil']],
    ])('%s: "+" and "%20" are spaces, "%2B" is a plus', async (query, expected) => {
      expect(await namesOf('products', query)).toEqual(expected);
    });

    it('a category filter holding &, +, = and % finds the category by its exact name', async () => {
      expect(await namesOf('products', new URLSearchParams({ category: AWKWARD_CATEGORY }).toString())).toEqual(['Rose & Amber']);
    });

    it('pages through a search with a space, the cursor and the filter both sent as URLSearchParams builds them', async () => {
      const { items } = await walkList<{ name: string }>((cursor) =>
        api.get(`products?${new URLSearchParams({ search: 'oud oil', limit: '1', ...(cursor === null ? {} : { cursor }) }).toString()}`),
      );
      expect(items.map((item) => item.name)).toEqual(['Oud oil']);
    });
  });

  describe('categories.list', () => {
    it.each([
      ['oud & musk', ['Oud & Musk']],
      ['oud+musk', ['Oud+Musk']],
      ['oud musk', ['Oud Musk']],
      ['50% off = deal', ['50% off = deal']],
      ['شرقية', ['عطور شرقية']],
      ['& musks + co = 100%', [AWKWARD_CATEGORY]],
    ])('search %p built by URLSearchParams finds %p', async (search, expected) => {
      expect(await namesOf('categories', new URLSearchParams({ search }).toString())).toEqual(expected);
    });

    it.each([
      ['search=oud+musk', ['Oud Musk']],
      ['search=oud%20musk', ['Oud Musk']],
      ['search=oud%2Bmusk', ['Oud+Musk']],
    ])('%s: "+" and "%20" are spaces, "%2B" is a plus', async (query, expected) => {
      expect(await namesOf('categories', query)).toEqual(expected);
    });
  });

  describe('numbers in a query are plain decimals', () => {
    it.each(['products', 'categories', 'inventory'])('%s?limit=2 is a page of 2', async (list) => {
      const response = await api.get(`${list}?limit=2`);
      expect({ status: response.status, limit: response.body.meta?.limit }).toEqual({ status: 200, limit: 2 });
    });

    const looseNumbers = ['1e309', '1e2', '0x10', '025', '2.0', ' 5', '5 '];
    it.each(['products', 'categories', 'inventory'].flatMap((list) => looseNumbers.map((limit) => [list, limit])))(
      '%s?limit=%p (a number the validator would coerce) is 400 VALIDATION_FAILED naming limit',
      async (list, limit) => {
        const response = await api.get(`${list}?${new URLSearchParams({ limit }).toString()}`);
        expectError(response, 400, 'VALIDATION_FAILED');
        expect(response.body.error.details).toEqual([expect.objectContaining({ location: 'query', field: 'limit' })]);
      },
    );
  });

  describe('oauth.authorize keeps reading "+" between scopes as a space', () => {
    let client: AppFixture;

    beforeAll(async () => {
      client = await createTestApp(h, { required: ['products:read'], optional: ['orders:read'] });
    });

    const withScope = (rawScope: string) => {
      const { scope: _scope, ...rest } = authorizeQuery(store, client, []);
      return `${authorizeUrl(rest)}&scope=${rawScope}`;
    };

    it('scope=products:read+orders:read names two scopes: the request passes every check and goes to sign-in', async () => {
      const response = await request(h.app).get(withScope('products:read+orders:read'));
      expect(response.status).toBe(302);
      const returnTo = new URL(decodeURIComponent(String(response.headers.location).replace(/^\/dashboard\/login\?return_to=/, '')), 'http://localhost');
      expect(returnTo.searchParams.get('scope')).toBe('products:read orders:read');
    });

    it('scope=products:read%2Borders:read is one unknown scope: 400 INVALID_SCOPE', async () => {
      const response = await request(h.app).get(withScope('products:read%2Borders:read'));
      expect({ status: response.status, code: response.body.error?.code }).toEqual({ status: 400, code: 'INVALID_SCOPE' });
    });
  });
});
