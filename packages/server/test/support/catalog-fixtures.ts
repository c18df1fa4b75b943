import type { Express } from 'express';
import type { Knex } from 'knex';
import request from 'supertest';
import { type AppFixture, createTestApp, createTestStore, fullAccess, type Harness, installWithTokens, type StoreFixture } from './harness';

/** The columns of a `products` row a test may set; the rest get plain defaults. */
export interface ProductOverrides {
  name?: string;
  description?: string;
  short_desc?: string | null;
  category_id?: number | null;
  slug?: string | null;
  keywords?: string[];
  supported_devices?: Record<string, true> | null;
  seo_title?: string | null;
  seo_description?: string | null;
  og_image?: string | null;
  images?: Array<{ url: string; alt: string | null; sort: number; is_default: boolean }>;
  product_kind?: 'physical' | 'service' | 'digital';
  status?: 'active' | 'inactive';
  price_halalas?: number;
  old_price_halalas?: number | null;
  price_state?: 'required' | 'ready';
  quantity?: number;
  resource_version?: number;
  created_at?: number;
  updated_at?: number;
}

/** When fixture rows were created (before the harness clock's start). */
export const FIXTURE_TIME = Date.parse('2026-11-01T08:00:00Z');

let productCounter = 0;

/** Inserts a product row directly (not through the API) and returns its id. */
export async function insertProduct(db: Knex, storeId: string, overrides: ProductOverrides = {}): Promise<number> {
  productCounter += 1;
  const { keywords = [], images = [], supported_devices = null, ...columns } = overrides;
  const [inserted] = (await db('products')
    .insert({
      store_id: storeId,
      name: `Product ${productCounter}`,
      product_kind: 'physical',
      created_at: FIXTURE_TIME,
      updated_at: FIXTURE_TIME,
      ...columns,
      keywords: JSON.stringify(keywords),
      images: JSON.stringify(images),
      supported_devices: supported_devices === null ? null : JSON.stringify(supported_devices),
    })
    .returning('id')) as Array<number | { id: number }>;
  if (inserted === undefined) throw new Error('No product inserted');
  return typeof inserted === 'number' ? inserted : inserted.id;
}

/** Inserts unsold units (codes) of a digital product; `delivered` ones are marked sold. */
export async function insertDigitalUnits(db: Knex, storeId: string, productId: number, codes: string[], delivered = false): Promise<void> {
  await db('digital_units').insert(
    codes.map((code) => ({ store_id: storeId, product_id: productId, code, delivered_at: delivered ? FIXTURE_TIME : null, created_at: FIXTURE_TIME })),
  );
}

export interface StoredProduct {
  quantity: number;
  resource_version: number;
  updated_at: number;
  images: string;
  slug: string | null;
  seo_title: string | null;
  seo_description: string | null;
  keywords: string;
  og_image: string | null;
}

/** The product's row as stored. */
export async function productRow(db: Knex, productId: number): Promise<StoredProduct> {
  const row = (await db('products').where({ id: productId }).first()) as StoredProduct | undefined;
  if (!row) throw new Error(`No product ${productId}`);
  return { ...row, quantity: Number(row.quantity), resource_version: Number(row.resource_version), updated_at: Number(row.updated_at) };
}

export interface OutboxEvent {
  type: string;
  installation_id: string | null;
  payload: { id: string; type: string; api_version: string; store_id: string; occurred_at: string; data: Record<string, unknown> };
}

/** The store's outbox events. */
async function storeEvents(db: Knex, storeId: string): Promise<OutboxEvent[]> {
  const rows = (await db('outbox_events').where({ store_id: storeId }).select('type', 'installation_id', 'payload')) as Array<{
    type: string;
    installation_id: string | null;
    payload: string;
  }>;
  return rows.map((row) => ({ ...row, payload: JSON.parse(row.payload) as OutboxEvent['payload'] }));
}

/** How many rows of `table` the store has. */
export async function countRows(db: Knex, table: string, storeId: string): Promise<number> {
  const [row] = await db(table).where({ store_id: storeId }).count({ n: '*' });
  return Number(row?.n ?? 0);
}

/** Store API calls with one bearer token: `GET|POST|PATCH /stores/{storeId}/v1/{path}`. */
export class StoreApi {
  constructor(
    private readonly app: Express,
    readonly storeId: string,
    readonly accessToken: string,
  ) {}

  private url(path: string): string {
    return `/stores/${this.storeId}/v1/${path}`;
  }

  /** A call with this token and nothing else (set the body, headers, content type as the test needs). */
  call(method: 'get' | 'post' | 'patch', path: string): request.Test {
    return request(this.app)[method](this.url(path)).set('Authorization', `Bearer ${this.accessToken}`);
  }

  /** The same call without any Authorization header. */
  anonymous(method: 'get' | 'post' | 'patch', path: string): request.Test {
    return request(this.app)[method](this.url(path));
  }

  get(path: string): request.Test {
    return this.call('get', path);
  }

  post(path: string, body: object, idempotencyKey?: string): request.Test {
    const call = this.call('post', path);
    return (idempotencyKey === undefined ? call : call.set('Idempotency-Key', idempotencyKey)).send(body);
  }

  patch(path: string, body: object): request.Test {
    return this.call('patch', path).send(body);
  }

  /** The same store with another token (another app's scopes). */
  as(accessToken: string): StoreApi {
    return new StoreApi(this.app, this.storeId, accessToken);
  }
}

/** A store and a StoreApi holding every scope. */
export async function storeWithFullAccess(h: Harness, name?: string): Promise<{ store: StoreFixture; api: StoreApi }> {
  const store = await createTestStore(h, name);
  const { tokens } = await fullAccess(h, store);
  return { store, api: new StoreApi(h.app, store.store.id, tokens.access_token) };
}

/** A token of a new app installed in the store with exactly these scopes. */
export async function tokenWithScopes(h: Harness, store: StoreFixture, scopes: string[]): Promise<string> {
  const client: AppFixture = await createTestApp(h, { required: scopes, optional: [] });
  return (await installWithTokens(h, store, client, scopes)).access_token;
}

/** Path ids the validator refuses (400 VALIDATION_FAILED): zero, a leading zero, a sign. */
export const MALFORMED_IDS = ['0', '01', '-1'];
/** A well-formed id no product can have (beyond the id column's range): 404 NOT_FOUND. */
export const HUGE_ID = '99999999999';

type ProductEventData = { product?: { id?: number; resource_version?: number }; adjustment?: { product_id?: number; resource_version?: number } };

const dataOf = (event: OutboxEvent) => event.payload.data as ProductEventData;
const versionIn = (event: OutboxEvent) => dataOf(event).product?.resource_version ?? dataOf(event).adjustment?.resource_version ?? 0;

/**
 * The store's outbox events about one product (`product.*` events and its `inventory.adjusted`), in
 * the order of the product versions they carry (events of one instant have no other order).
 */
export async function productEvents(db: Knex, storeId: string, productId: number): Promise<OutboxEvent[]> {
  const about = (event: OutboxEvent) => dataOf(event).product?.id === productId || dataOf(event).adjustment?.product_id === productId;
  return (await storeEvents(db, storeId)).filter(about).sort((a, b) => versionIn(a) - versionIn(b) || a.type.localeCompare(b.type));
}

interface AdjustmentSummary {
  id: number;
  delta: number;
  quantity_after: number;
}

interface UnitSummary {
  code: string;
  delivered_at: number | null;
}

/** Everything stored about a product: its row, adjustments, units and events; equal before and after a refused request. */
export async function productState(db: Knex, storeId: string, productId: number) {
  const adjustments: AdjustmentSummary[] = await db('inventory_adjustments')
    .where({ product_id: productId })
    .orderBy('id')
    .select('id', 'delta', 'quantity_after');
  const units: UnitSummary[] = await db('digital_units').where({ product_id: productId }).orderBy('id').select('code', 'delivered_at');
  return { row: await productRow(db, productId), adjustments, units, events: await productEvents(db, storeId, productId) };
}

/** Over the store API's 64 KiB body limit (413 PAYLOAD_TOO_LARGE). */
export const OVERSIZED_TEXT = 'x'.repeat(70_000);
