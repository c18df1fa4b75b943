import type { components } from '@svc/contract';
import { toIso } from '../../core/clock';
import type { TaggedResource } from '../../core/etag';
import { ApiError } from '../../core/errors';
import { type SqlValue, selectRows } from '../../db/reads';
import { type Db, brokenUniqueIndex, inTransaction } from '../../db/transactions';
import { recordEvent } from '../../platform/outbox';
import { nameKeyOf } from './categories';
import { fromHalalas, toHalalas } from '../../core/money';

/**
 * Products: the repository (every query scoped by `store_id`), the rules of the interface's States
 * and transitions table and DESIGN.md § 7 (a new product is `inactive`, `0.00`, `price_state`
 * `required`; a price set makes it `ready`; activation needs a price), and the view of a row as
 * the spec's Product. Changes and their `product.created` / `product.updated` events commit in one
 * transaction; updates are conditional on the `resource_version` the caller's `If-Match` named.
 */

export type Product = components['schemas']['Product'];
export type ProductCreate = components['schemas']['ProductCreate'];
export type ProductContentUpdate = components['schemas']['ProductContentUpdate'];
export type PriceUpdate = components['schemas']['PriceUpdate'];
export type PriceRecord = components['schemas']['PriceRecord'];
export type ProductStatus = components['schemas']['ProductStatus'];

/** The resource type inside a product's ETag; prices share it (they are a view of the product). */
export const PRODUCT_ETAG_TYPE = 'product';

/** One image as `products.images` stores it (JSON text). */
export interface StoredImage {
  url: string;
  alt: string | null;
  sort: number;
  is_default: boolean;
}

/** A `products` row as both databases return it. */
export interface ProductRow {
  id: number;
  store_id: string;
  name: string;
  description: string;
  short_desc: string | null;
  category_id: number | null;
  slug: string | null;
  keywords: string;
  supported_devices: string | null;
  seo_title: string | null;
  seo_description: string | null;
  og_image: string | null;
  images: string;
  product_kind: Product['product_kind'];
  status: ProductStatus;
  price_halalas: number;
  old_price_halalas: number | null;
  price_state: Product['price_state'];
  quantity: number;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

/** Who changes the catalog, and when: the event's store and installation, and the change's time. */
export interface CatalogActor {
  storeId: string;
  installationId: string;
  now: number;
}

/** Called with the current row before a change; throws (412) when the caller's `If-Match` is not its tag. */
export type Precondition = (current: ProductRow) => void;

/** Ids are `integer` columns: anything beyond cannot exist (and PostgreSQL refuses to compare with it). */
export const MAX_ROW_ID = 2_147_483_647;

export const notFound = () => new ApiError('NOT_FOUND', 'No product with that id in this store.');

const invalidBody = (field: string, message: string) =>
  new ApiError('VALIDATION_FAILED', 'The request is not valid.', { details: [{ location: 'body', field, message }] });


// ---------------------------------------------------------------------------------------------
// The view

function parseJson<T>(text: string | null, fallback: T): T {
  return text === null ? fallback : (JSON.parse(text) as T);
}

/** An image as a row may hold it (older rows: a bare URL, or no `sort`/`is_default`). */
interface StoredImageJson {
  url: string;
  alt?: string | null;
  sort?: number;
  is_default?: boolean;
}

/** The stored images (`[{url, alt, sort, is_default}]`, a bare URL tolerated) in display order, the default first. */
export function storedImages(text: string): StoredImage[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error('Stored images are not a list');
  const images = parsed.map((item: unknown): StoredImageJson => (typeof item === 'string' ? { url: item } : (item as StoredImageJson)));
  const ordered = images.map((image, index) => ({ image, index })).sort((a, b) => (a.image.sort ?? a.index) - (b.image.sort ?? b.index));
  const defaultAt = Math.max(0, ordered.findIndex(({ image }) => image.is_default === true));
  return frontFirst(ordered.map(({ image }) => image), defaultAt).map((image, sort) => ({ url: image.url, alt: image.alt ?? null, sort, is_default: sort === 0 }));
}

/** The items with the one at `index` moved to the front. */
export function frontFirst<T>(items: T[], index: number): T[] {
  const chosen = items[index];
  return chosen === undefined ? items : [chosen, ...items.filter((_, at) => at !== index)];
}

/** The columns a product's view is made of: all but the store, the category's id and the stock. */
const VIEW_COLUMNS = [
  'id', 'name', 'description', 'short_desc', 'slug', 'keywords', 'supported_devices', 'seo_title', 'seo_description',
  'og_image', 'images', 'product_kind', 'status', 'price_halalas', 'old_price_halalas', 'price_state', 'resource_version',
  'created_at', 'updated_at',
] as const satisfies readonly (keyof ProductRow)[];

export type ProductViewRow = Pick<ProductRow, (typeof VIEW_COLUMNS)[number]>;

/** The spec's Product for a row and the name of its category (null when it has none). */
export function productView(row: ProductViewRow, categoryName: string | null): Product {
  const images = storedImages(row.images);
  const [first] = images;
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    short_desc: row.short_desc,
    image: first?.url ?? null,
    images: images.map((image) => image.url),
    image_alt: first?.alt ?? null,
    category: categoryName,
    slug: row.slug,
    keywords: parseJson<string[]>(row.keywords, []),
    supported_devices: parseJson<Product['supported_devices']>(row.supported_devices, null),
    seo_title: row.seo_title,
    seo_description: row.seo_description,
    og_image: row.og_image,
    product_kind: row.product_kind,
    status: row.status,
    price: fromHalalas(Number(row.price_halalas)),
    old_price: row.old_price_halalas === null ? null : fromHalalas(Number(row.old_price_halalas)),
    price_state: row.price_state,
    resource_version: row.resource_version,
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}

/**
 * Views already built for row objects: the SQLite reader hands out the same row objects until
 * something is committed, so a product read again is not rendered again. Views are shared: read-only.
 */
const viewsOfRows = new WeakMap<object, Product>();

/** The view of a row read with its category's name, built once per row object. */
export function viewOfRow(row: Readonly<ProductListRow>): Product {
  let view = viewsOfRows.get(row);
  if (view === undefined) {
    view = productView(row, row.category_name);
    viewsOfRows.set(row, view);
  }
  return view;
}

/** The price record: the product's price, previous price and pricing state, with its version. */
export function priceRecordView(row: ProductRow): PriceRecord {
  return {
    price: fromHalalas(Number(row.price_halalas)),
    old_price: row.old_price_halalas === null ? null : fromHalalas(Number(row.old_price_halalas)),
    price_state: row.price_state,
    resource_version: row.resource_version,
    updated_at: toIso(Number(row.updated_at)),
  };
}

/** What the product's ETag names (`etagOf(key, productTag(row))`). */
export function productTag(row: ProductRow): TaggedResource {
  return { storeId: row.store_id, type: PRODUCT_ETAG_TYPE, id: row.id, version: row.resource_version };
}

// ---------------------------------------------------------------------------------------------
// Reads

/** A row id from a path: undefined when it cannot name a row (not a positive integer in range). */
export function rowIdOf(id: number | string): number | undefined {
  const rowId = Number(id);
  return Number.isSafeInteger(rowId) && rowId >= 1 && rowId <= MAX_ROW_ID ? rowId : undefined;
}

/** The product with this id in this store; undefined when absent or another store's. */
export async function findProductRow(db: Db, storeId: string, id: number | string): Promise<ProductRow | undefined> {
  const productId = rowIdOf(id);
  return productId === undefined ? undefined : db<ProductRow>('products').where({ store_id: storeId, id: productId }).first();
}

/** The name of the row's category, or null. */
export async function categoryNameOf(db: Db, row: Pick<ProductRow, 'store_id' | 'category_id'>): Promise<string | null> {
  if (row.category_id === null) return null;
  const category = await db('categories').where({ store_id: row.store_id, id: row.category_id }).first<{ name: string } | undefined>('name');
  return category?.name ?? null;
}

export type ProductListRow = ProductViewRow & { category_name: string | null };

/** The store's products, each with its category's name: one query reads both (plain SQL: every read makes it). */
const FROM_PRODUCTS_WITH_CATEGORY = `
  from products p
  left join categories c on c.id = p.category_id and c.store_id = p.store_id
  where p.store_id = ?`;

const PRODUCT_WITH_CATEGORY_NAME_SQL = `select p.*, c.name as category_name ${FROM_PRODUCTS_WITH_CATEGORY} and p.id = ?`;

/** A page reads only what the views need (each value read costs, 26 rows a page). */
const PAGE_SQL = `select ${VIEW_COLUMNS.map((column) => `p.${column}`).join(', ')}, c.name as category_name ${FROM_PRODUCTS_WITH_CATEGORY}`;

/** The product and its view; undefined when absent or another store's. */
export async function loadProduct(db: Db, storeId: string, id: number | string): Promise<{ row: ProductRow; view: Product } | undefined> {
  const productId = rowIdOf(id);
  if (productId === undefined) return undefined;
  const [row] = await selectRows<ProductRow & { category_name: string | null }>(db, PRODUCT_WITH_CATEGORY_NAME_SQL, [storeId, productId]);
  return row && { row, view: viewOfRow(row) };
}

/** The category's id by name, case-insensitively (names are unique per store that way); 422 CATEGORY_NOT_FOUND. */
async function categoryIdByName(db: Db, storeId: string, name: string): Promise<number> {
  const category = await db('categories').where({ store_id: storeId, name_key: nameKeyOf(name) }).first<{ id: number } | undefined>('id');
  if (!category) throw new ApiError('CATEGORY_NOT_FOUND', `No category named "${name}" in this store.`);
  return Number(category.id);
}

export interface ProductFilters {
  status?: ProductStatus | undefined;
  /** A category name (case-insensitive); no such category means no products. */
  category?: string | undefined;
  /** Text the name contains, case-insensitively. */
  search?: string | undefined;
  /** Only products with `updated_at` at or after this instant (epoch ms). */
  updatedSince?: number | undefined;
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (character) => `\\${character}`);

/**
 * One keyset slice of the store's products matching the filters: `id > afterId`, ascending, at most
 * `take` rows, each with its category's name. Reads the `(store_id, …, id)` indexes, never OFFSET.
 */
export async function listProductRows(db: Db, storeId: string, filters: ProductFilters, afterId: number | undefined, take: number): Promise<readonly Readonly<ProductListRow>[]> {
  const conditions: string[] = [];
  const params: SqlValue[] = [storeId];
  const where = (condition: string, ...values: SqlValue[]) => {
    conditions.push(condition);
    params.push(...values);
  };
  if (filters.status !== undefined) where('p.status = ?', filters.status);
  if (filters.category !== undefined) where('p.category_id in (select id from categories where store_id = ? and name_key = ?)', storeId, nameKeyOf(filters.category));
  if (filters.search !== undefined) where("lower(p.name) like ? escape '\\'", `%${escapeLike(filters.search.toLowerCase())}%`);
  if (filters.updatedSince !== undefined) where('p.updated_at > ?', filters.updatedSince);
  if (afterId !== undefined) where('p.id > ?', afterId);
  const sql = `${PAGE_SQL}${conditions.map((condition) => ` and ${condition}`).join('')} order by p.id asc limit ?`;
  return selectRows<ProductListRow>(db, sql, [...params, take]);
}

// ---------------------------------------------------------------------------------------------
// Rules

/** `old_price`, when set, is the price before discount: above `price` (docs/decisions.md). */
function requireOldPriceAbove(price: number, oldPrice: number | null, message = 'must be above price'): void {
  if (oldPrice !== null && oldPrice <= price) throw invalidBody('/old_price', message);
}

/** The create body's images as stored: `image` (else the first of `images`) is the default, first. */
function imagesOfCreate(body: ProductCreate): StoredImage[] {
  const listed = body.images ?? [];
  const defaultUrl = body.image ?? listed[0];
  if (defaultUrl === undefined) {
    if (body.image_alt !== undefined) throw invalidBody('/image_alt', 'needs an image to describe');
    return [];
  }
  const urls = [defaultUrl, ...listed.filter((url) => url !== defaultUrl)];
  if (urls.length > 20) throw invalidBody('/images', 'must NOT have more than 20 images, image included');
  return urls.map((url, sort) => ({ url, alt: sort === 0 ? (body.image_alt ?? null) : null, sort, is_default: sort === 0 }));
}

/** The create body's device list as the stored set (`{"ios": true}`). */
const deviceSet = (devices: readonly string[]) => JSON.stringify(Object.fromEntries(devices.map((device) => [device, true])));

const slugTaken = (slug: string) => new ApiError('SLUG_TAKEN', `Another product of this store has the slug "${slug}".`);

/** 409 SLUG_TAKEN when another product of the store has the slug. */
async function requireFreeSlug(db: Db, storeId: string, slug: string): Promise<void> {
  const taken = await db('products').where({ store_id: storeId, slug }).first('id');
  if (taken) throw slugTaken(slug);
}

async function emit(db: Db, actor: CatalogActor, type: 'product.created' | 'product.updated', view: Product): Promise<void> {
  await recordEvent(db, { type, storeId: actor.storeId, installationId: actor.installationId, occurredAt: actor.now, data: { product: view } });
}

// ---------------------------------------------------------------------------------------------
// Changes

export interface ProductChange {
  row: ProductRow;
  view: Product;
}

/**
 * `products.create`: `inactive`; without `price` it is `0.00` with `price_state` `required`, with a
 * price `ready`. The category must exist (422), the slug be free in the store (409). Writes
 * `product.created` in the same transaction.
 */
export async function createProduct(db: Db, actor: CatalogActor, body: ProductCreate): Promise<ProductChange> {
  return inTransaction(db, async (trx) => {
    const price = body.price === undefined ? 0 : toHalalas(body.price);
    const oldPrice = body.old_price === undefined || body.old_price === null ? null : toHalalas(body.old_price);
    requireOldPriceAbove(price, oldPrice);
    const images = imagesOfCreate(body);
    const categoryId = body.category === undefined || body.category === null ? null : await categoryIdByName(trx, actor.storeId, body.category);
    if (body.slug !== undefined) await requireFreeSlug(trx, actor.storeId, body.slug);
    let inserted: unknown[];
    try {
      inserted = await trx('products')
        .insert({
          store_id: actor.storeId,
          name: body.name,
          description: body.description ?? '',
          short_desc: body.short_desc ?? null,
          category_id: categoryId,
          slug: body.slug ?? null,
          keywords: JSON.stringify(body.keywords ?? []),
          supported_devices: body.supported_devices === undefined ? null : deviceSet(body.supported_devices),
          seo_title: body.seo_title ?? null,
          seo_description: body.seo_description ?? null,
          og_image: body.og_image ?? null,
          images: JSON.stringify(images),
          product_kind: body.product_kind,
          status: 'inactive',
          price_halalas: price,
          old_price_halalas: oldPrice,
          price_state: body.price === undefined ? 'required' : 'ready',
          quantity: 0,
          resource_version: 1,
          created_at: actor.now,
          updated_at: actor.now,
        })
        .returning('id');
    } catch (error) {
      if (body.slug !== undefined && brokenUniqueIndex(error)?.includes('slug')) throw slugTaken(body.slug);
      throw error;
    }
    const [first] = inserted;
    const id = typeof first === 'object' && first !== null ? (first as { id: number }).id : first;
    const change = await loadProduct(trx, actor.storeId, Number(id));
    if (!change) throw new Error(`The product just created (${String(id)}) is missing`);
    await emit(trx, actor, 'product.created', change.view);
    return change;
  });
}

/**
 * Applies `changes` to the product if it still has the version the precondition accepted: read,
 * check, `update … where resource_version = ?`; 0 rows updated means someone changed it meanwhile,
 * and the precondition, called again with the fresh row, answers 412. Raises `resource_version`,
 * stamps `updated_at`, writes `product.updated`.
 */
async function updateProduct(
  db: Db,
  actor: CatalogActor,
  id: number | string,
  precondition: Precondition,
  changesFor: (current: ProductRow, trx: Db) => Promise<Partial<ProductRow>>,
): Promise<ProductChange> {
  return inTransaction(db, async (trx) => {
    const current = await findProductRow(trx, actor.storeId, id);
    if (!current) throw notFound();
    precondition(current);
    const changes = await changesFor(current, trx);
    const updated = await trx('products')
      .where({ id: current.id, store_id: actor.storeId, resource_version: current.resource_version })
      .update({ ...changes, resource_version: current.resource_version + 1, updated_at: actor.now });
    if (updated !== 1) {
      const fresh = await findProductRow(trx, actor.storeId, current.id);
      if (!fresh) throw notFound();
      precondition(fresh);
      throw new Error(`Product ${current.id} changed during an update, yet its new version passed the precondition`);
    }
    const change = await loadProduct(trx, actor.storeId, current.id);
    if (!change) throw notFound();
    await emit(trx, actor, 'product.updated', change.view);
    return change;
  });
}

/**
 * `products.content`: name, descriptions, category (by name, or null), supported devices (null
 * clears) and `status`. Making the product `active` while `price_state` is `required` is 409
 * PRICE_REQUIRED (DESIGN.md § 7).
 */
export function updateProductContent(db: Db, actor: CatalogActor, id: number | string, precondition: Precondition, body: ProductContentUpdate): Promise<ProductChange> {
  return updateProduct(db, actor, id, precondition, async (current, trx) => {
    if (body.status === 'active' && current.price_state === 'required') {
      throw new ApiError('PRICE_REQUIRED', 'Set a price before activating the product.');
    }
    const changes: Partial<ProductRow> = {};
    if (body.name !== undefined) changes.name = body.name;
    if (body.description !== undefined) changes.description = body.description;
    if (body.short_desc !== undefined) changes.short_desc = body.short_desc;
    if (body.category !== undefined) changes.category_id = body.category === null ? null : await categoryIdByName(trx, actor.storeId, body.category);
    if (body.supported_devices !== undefined) changes.supported_devices = body.supported_devices === null ? null : deviceSet(body.supported_devices);
    if (body.status !== undefined) changes.status = body.status;
    return changes;
  });
}

/**
 * `products.prices`: sets the price and, when given, the previous price (null clears it; left out
 * it stays, and must still be above the new price). The price is set, so `price_state` is `ready`.
 */
export function updateProductPrices(db: Db, actor: CatalogActor, id: number | string, precondition: Precondition, body: PriceUpdate): Promise<ProductChange> {
  return updateProduct(db, actor, id, precondition, async (current) => {
    const price = toHalalas(body.price);
    if (body.old_price !== undefined) {
      const oldPrice = body.old_price === null ? null : toHalalas(body.old_price);
      requireOldPriceAbove(price, oldPrice);
      return { price_halalas: price, old_price_halalas: oldPrice, price_state: 'ready' };
    }
    const kept = current.old_price_halalas === null ? null : Number(current.old_price_halalas);
    requireOldPriceAbove(price, kept, 'the old_price kept must be above the new price: send old_price (null clears it)');
    return { price_halalas: price, old_price_halalas: kept, price_state: 'ready' };
  });
}
