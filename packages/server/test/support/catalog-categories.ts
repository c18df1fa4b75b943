import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import { createCategory } from '../../src/domain/catalog/categories/changes';
import type { CategoryCreateInput, CategoryRow } from '../../src/domain/catalog/categories/row';
import { createTestApp, type Harness, installWithTokens, type StoreFixture } from './harness';
import { walkList, withCursor } from './list-walk';

/** `/stores/{storeId}/v1/categories[/{id}]`. */
export const categoriesPath = (storeId: string, id?: number | string) => `/stores/${storeId}/v1/categories${id === undefined ? '' : `/${id}`}`;

/** An access token of a fresh app installed on the store with exactly these scopes. */
export async function tokenWith(h: Harness, store: StoreFixture, scopes: string[]): Promise<string> {
  const client = await createTestApp(h, { required: scopes, optional: [] });
  return (await installWithTokens(h, store, client, scopes)).access_token;
}

/** The tokens the category tests use: a writer, the two readers the interface allows, and one without any category scope. */
export interface CategoryTokens {
  writer: string;
  categoriesReader: string;
  productsReader: string;
  unrelated: string;
}

export async function categoryTokens(h: Harness, store: StoreFixture): Promise<CategoryTokens> {
  return {
    writer: await tokenWith(h, store, ['categories:read', 'categories:write']),
    categoriesReader: await tokenWith(h, store, ['categories:read']),
    productsReader: await tokenWith(h, store, ['products:read']),
    unrelated: await tokenWith(h, store, ['orders:read']),
  };
}

const bearer = (token: string) => `Bearer ${token}`;

/** `POST …/categories` with an `Idempotency-Key` (a fresh one unless given; `null` sends none). */
export function postCategory(app: Express, storeId: string, token: string, body: unknown, key: string | null = randomUUID()): request.Test {
  const call = request(app).post(categoriesPath(storeId)).set('Authorization', bearer(token));
  return (key === null ? call : call.set('Idempotency-Key', key)).send(body as object);
}

export const getCategoryCall = (app: Express, storeId: string, token: string, id: number | string) =>
  request(app).get(categoriesPath(storeId, id)).set('Authorization', bearer(token));

/** `PATCH …/categories/{id}` with `If-Match` (none when `ifMatch` is undefined). */
export function patchCategory(app: Express, storeId: string, token: string, id: number | string, body: unknown, ifMatch?: string): request.Test {
  const call = request(app).patch(categoriesPath(storeId, id)).set('Authorization', bearer(token));
  return (ifMatch === undefined ? call : call.set('If-Match', ifMatch)).send(body as object);
}

export const listCategoriesCall = (app: Express, storeId: string, token: string, query: Record<string, string | number> = {}) =>
  request(app).get(categoriesPath(storeId)).query(query).set('Authorization', bearer(token));

/** Follows `next_cursor` from the first page to the last: the ids served, in order, and the pages' sizes. */
export async function walkCategories(
  app: Express,
  storeId: string,
  token: string,
  query: Record<string, string | number>,
): Promise<{ ids: number[]; pages: number[] }> {
  const walk = await walkList<{ id: number }>((cursor) => listCategoriesCall(app, storeId, token, withCursor(query, cursor)));
  return { ids: walk.items.map((category) => category.id), pages: walk.pages.map((page) => page.data.length) };
}

/** Categories created through the domain (no HTTP), for lists and trees: names `${prefix} 001`, …. */
export async function seedCategories(
  h: Harness,
  storeId: string,
  count: number,
  prefix: string,
  extra: Partial<CategoryCreateInput> = {},
): Promise<CategoryRow[]> {
  const rows: CategoryRow[] = [];
  for (let i = 1; i <= count; i += 1) {
    rows.push(await createCategory(h.db, { storeId, installationId: null, now: h.clock.now() }, { name: `${prefix} ${String(i).padStart(3, '0')}`, ...extra }));
  }
  return rows;
}

/** Products of the store in the category (straight into the table: only `category_id` matters here). */
export async function seedProducts(h: Harness, storeId: string, categoryId: number | null, count: number): Promise<void> {
  const now = h.clock.now();
  const rows = Array.from({ length: count }, (_, i) => ({
    store_id: storeId,
    name: `Product ${randomUUID().slice(0, 8)} ${i}`,
    category_id: categoryId,
    product_kind: 'physical',
    created_at: now,
    updated_at: now,
  }));
  await h.db('products').insert(rows);
}

/** The store's category rows, by id. */
export const storedCategories = (h: Harness, storeId: string): Promise<CategoryRow[]> =>
  h.db<CategoryRow>('categories').where('store_id', storeId).orderBy('id');

export const ETAG = /^"p1\.[0-9]+\.[A-Za-z0-9_-]{43}"$/;
