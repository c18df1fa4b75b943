import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import type { Knex } from 'knex';
import request from 'supertest';
import type { Product } from '../../src/domain/catalog/products/row';
import { createTestApp, createTestStore, type Harness, installWithTokens, type StoreFixture } from './harness';
import { walkList, withCursor } from './list-walk';

/** `/stores/{storeId}/v1/products[/{id}[/{part}]]`. */
export const productsPath = (storeId: string, id?: number | string, part?: 'content' | 'prices') =>
  `/stores/${storeId}/v1/products${id === undefined ? '' : `/${id}`}${part === undefined ? '' : `/${part}`}`;

/** An ETag as the interface gives it: `"p1.<version>.<43 base64url characters>"`. */
export const etagOfVersion = (version: number) => new RegExp(`^"p1\\.${version}\\.[A-Za-z0-9_-]{43}"$`);

/** An access token of a fresh app installed on the store with exactly these scopes. */
export async function tokenWith(h: Harness, store: StoreFixture, scopes: string[]): Promise<string> {
  const client = await createTestApp(h, { required: scopes, optional: [] });
  return (await installWithTokens(h, store, client, scopes)).access_token;
}

/** The scope sets the product tests call the API with (dependencies included, as consent requires). */
export const SCOPE_SETS = {
  full: ['products:read', 'products:write', 'products.prices:read', 'products.prices:write'],
  writer: ['products:read', 'products:write'],
  reader: ['products:read'],
  pricer: ['products.prices:read', 'products.prices:write'],
  priceReader: ['products.prices:read'],
  unrelated: ['categories:read'],
} as const;
export type ScopeSet = keyof typeof SCOPE_SETS;

export interface Shop {
  store: StoreFixture;
  storeId: string;
  /** One access token per scope set asked for. */
  tokens: Record<ScopeSet, string>;
}

/** A fresh store with an app installed per scope set asked for (`full` always). */
export async function openShop(h: Harness, ...sets: ScopeSet[]): Promise<Shop> {
  const store = await createTestStore(h);
  const tokens = {} as Record<ScopeSet, string>;
  for (const set of new Set<ScopeSet>(['full', ...sets])) tokens[set] = await tokenWith(h, store, [...SCOPE_SETS[set]]);
  return { store, storeId: store.store.id, tokens };
}

const bearer = (token: string) => `Bearer ${token}`;

/** `POST …/products` with an `Idempotency-Key` (a fresh one unless given; `null` sends none). */
export function postProduct(app: Express, storeId: string, token: string, body: unknown, key: string | null = randomUUID()): request.Test {
  const call = request(app).post(productsPath(storeId)).set('Authorization', bearer(token));
  return (key === null ? call : call.set('Idempotency-Key', key)).send(body as object);
}

export const getProductCall = (app: Express, storeId: string, token: string, id: number | string, part?: 'prices') =>
  request(app)
    .get(productsPath(storeId, id, part))
    .set('Authorization', bearer(token));

/** `PATCH …/products/{id}/{content|prices}` with `If-Match` (none when `ifMatch` is undefined). */
export function patchProduct(
  app: Express,
  storeId: string,
  token: string,
  id: number | string,
  part: 'content' | 'prices',
  body: unknown,
  ifMatch?: string,
): request.Test {
  const call = request(app)
    .patch(productsPath(storeId, id, part))
    .set('Authorization', bearer(token));
  return (ifMatch === undefined ? call : call.set('If-Match', ifMatch)).send(body as object);
}

export const listProductsCall = (app: Express, storeId: string, token: string, query: Record<string, string | number> = {}) =>
  request(app).get(productsPath(storeId)).query(query).set('Authorization', bearer(token));

/** Creates a product through the API and returns it with its ETag; fails loudly otherwise. */
export async function createProductVia(
  app: Express,
  storeId: string,
  token: string,
  body: Record<string, unknown> = {},
): Promise<{ product: Product; etag: string }> {
  const response = await postProduct(app, storeId, token, { name: 'Royal Oud Perfume 100 ml', product_kind: 'physical', ...body });
  if (response.status !== 201) throw new Error(`products.create answered ${response.status}: ${JSON.stringify(response.body)}`);
  return { product: response.body.data as Product, etag: response.headers.etag as string };
}

/** A category row written straight to the table (the category API is another suite's subject). */
export async function insertCategory(h: Harness, storeId: string, name: string): Promise<number> {
  const now = h.clock.now();
  const [row] = await h
    .db('categories')
    .insert({ store_id: storeId, name, name_key: name.toLowerCase(), sort_order: 0, status: 'active', resource_version: 1, created_at: now, updated_at: now })
    .returning('id');
  return Number(typeof row === 'object' ? (row as { id: number }).id : row);
}

export interface SeedProduct {
  name?: string;
  status?: 'active' | 'inactive';
  category_id?: number | null;
  updated_at?: number;
}

/** Product rows written straight to the table, in batches (paging tests need a thousand): their ids, ascending. */
export async function seedProducts(h: Harness, storeId: string, products: SeedProduct[]): Promise<number[]> {
  const now = h.clock.now();
  const rows = products.map((product, index) => ({
    store_id: storeId,
    name: product.name ?? `Seeded product ${index}`,
    product_kind: 'physical',
    status: product.status ?? 'inactive',
    price_state: product.status === 'active' ? 'ready' : 'required',
    price_halalas: product.status === 'active' ? 1000 : 0,
    category_id: product.category_id ?? null,
    created_at: now,
    updated_at: product.updated_at ?? now,
  }));
  const ids: number[] = [];
  for (let start = 0; start < rows.length; start += 50) {
    const inserted = await h
      .db('products')
      .insert(rows.slice(start, start + 50))
      .returning('id');
    ids.push(...inserted.map((row: unknown) => Number(typeof row === 'object' && row !== null ? (row as { id: number }).id : row)));
  }
  return ids.sort((a, b) => a - b);
}

/** The store's product rows, by id. */
export const productRows = (db: Knex, storeId: string) => db('products').where({ store_id: storeId }).orderBy('id');

/** The outbox events of the store, oldest first, as their stored payloads. */
export async function outboxPayloads(
  db: Knex,
  storeId: string,
  type?: string,
): Promise<{ id: string; type: string; store_id: string; occurred_at: string; api_version: string; data: { product: Product } }[]> {
  const query = db('outbox_events')
    .where({ store_id: storeId })
    .orderBy([{ column: 'occurred_at' }, { column: 'id' }]);
  if (type !== undefined) query.where({ type });
  const rows: { payload: string }[] = await query;
  return rows.map((row) => JSON.parse(row.payload));
}

/** The outbox rows of the store (to check the installation a change is attributed to). */
export const outboxRows = (db: Knex, storeId: string) => db('outbox_events').where({ store_id: storeId });

/** Nothing of the store was written: no product, no event. */
export async function expectNothingStored(db: Knex, storeId: string): Promise<void> {
  expect(await productRows(db, storeId)).toEqual([]);
  expect(await outboxRows(db, storeId)).toEqual([]);
}

/** Follows `next_cursor` from the first page to the last, running `between` before each next page: the ids served, in order. */
export async function walkProducts(
  app: Express,
  storeId: string,
  token: string,
  query: Record<string, string | number>,
  between: () => Promise<void> = async () => {},
): Promise<{ ids: number[]; pages: number; products: Product[] }> {
  const walk = await walkList<Product>((cursor) => listProductsCall(app, storeId, token, withCursor(query, cursor)), between);
  return { ids: walk.items.map((product) => product.id), pages: walk.pages.length, products: walk.items };
}
