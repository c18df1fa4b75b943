import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { toIso } from '../../core/clock';
import type { PageInfo } from '../../core/paging';
import { ApiError, type ErrorDetail, isApiError } from '../../core/errors';
import { type TaggedResource, etagOf, requireCurrent } from '../../core/etag';
import { type PageRequest, keysetPage } from '../../core/paging';
import { type Db, brokenUniqueIndex, inTransaction } from '../../db/transactions';

/**
 * Categories of a store: the repository and its rules. Every query is scoped by `store_id`. A name
 * is unique in its store compared case-insensitively (the `name_key` column holds the folded name
 * under a unique index); a slug is unique in its store; a parent is another category of the store
 * that is not a descendant. Products point at their category by `category_id`, so a renamed
 * category's products follow the new name.
 */

export type Category = components['schemas']['Category'];
export type CategoryCreate = components['schemas']['CategoryCreate'];
/** A create body as the domain takes it: `sort_order` and `status` have defaults (0, `active`). */
export type CategoryCreateInput = Omit<CategoryCreate, 'sort_order' | 'status'> & Partial<Pick<CategoryCreate, 'sort_order' | 'status'>>;
export type CategoryUpdate = components['schemas']['CategoryUpdate'];
type CategoryStatus = Category['status'];

export interface CategoryRow {
  id: number;
  store_id: string;
  name: string;
  name_key: string;
  slug: string | null;
  description: string | null;
  parent_id: number | null;
  sort_order: number;
  status: CategoryStatus;
  image: string | null;
  seo_title: string | null;
  seo_description: string | null;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

/** The resource type inside a category's ETag. */
export const CATEGORY_ETAG_TYPE = 'category';
/** The list's name inside its cursors. */
export const CATEGORY_LIST = 'categories.list';
/** Ids are 32-bit integer columns: a larger id in a path names nothing. */
export const MAX_CATEGORY_ID = 2_147_483_647;
/** A parent chain longer than this is treated as broken (it cannot happen through the API). */
const MAX_DEPTH = 10_000;

/** The case-insensitive form of a name: each character lower-cased on its own (never longer than the name). */
export function nameKeyOf(name: string): string {
  return Array.from(name, (character) => {
    const lower = character.toLowerCase();
    return Array.from(lower).length === 1 ? lower : character;
  }).join('');
}

/** A path id (`^[1-9][0-9]*$`, checked by the spec) as a number; undefined when no row can have it. */
export function categoryIdOf(pathId: string): number | undefined {
  if (!/^[1-9][0-9]*$/.test(pathId)) return undefined;
  const id = Number(pathId);
  return Number.isSafeInteger(id) && id <= MAX_CATEGORY_ID ? id : undefined;
}

/** The category as the API shows it. */
export function categoryView(row: CategoryRow, productsCount: number): Category {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    parent_id: row.parent_id,
    sort_order: row.sort_order,
    status: row.status,
    image: row.image,
    seo_title: row.seo_title,
    seo_description: row.seo_description,
    products_count: productsCount,
    resource_version: row.resource_version,
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}

/** What the category's ETag names: this version of this category of this store. */
export const categoryTag = (row: Pick<CategoryRow, 'store_id' | 'id' | 'resource_version'>): TaggedResource => ({
  storeId: row.store_id,
  type: CATEGORY_ETAG_TYPE,
  id: row.id,
  version: row.resource_version,
});

export const categoryEtag = (key: Buffer, row: Pick<CategoryRow, 'store_id' | 'id' | 'resource_version'>): string => etagOf(key, categoryTag(row));

// ---------------------------------------------------------------------------------------------
// Reads

const categories = (db: Db, storeId: string) => db<CategoryRow>('categories').where('store_id', storeId);

export async function findCategory(db: Db, storeId: string, id: number): Promise<CategoryRow | undefined> {
  if (!Number.isSafeInteger(id) || id < 1 || id > MAX_CATEGORY_ID) return undefined;
  return categories(db, storeId).andWhere('id', id).first();
}

/** The store's category with this name, compared case-insensitively (how products name their category). */
export async function findCategoryByName(db: Db, storeId: string, name: string): Promise<CategoryRow | undefined> {
  return categories(db, storeId).andWhere('name_key', nameKeyOf(name)).first();
}

async function findCategoryBySlug(db: Db, storeId: string, slug: string): Promise<CategoryRow | undefined> {
  return categories(db, storeId).andWhere('slug', slug).first();
}

/** How many of the store's products are in each of these categories (0 for none). */
export async function productsCounts(db: Db, storeId: string, ids: readonly number[]): Promise<Map<number, number>> {
  const counts = new Map<number, number>(ids.map((id) => [id, 0]));
  if (ids.length === 0) return counts;
  const rows = (await db('products')
    .select('category_id')
    .count({ count: '*' })
    .where('store_id', storeId)
    .whereIn('category_id', [...ids])
    .groupBy('category_id')) as { category_id: number; count: number | string }[];
  for (const row of rows) counts.set(Number(row.category_id), Number(row.count));
  return counts;
}

export async function productsCountOf(db: Db, storeId: string, id: number): Promise<number> {
  return (await productsCounts(db, storeId, [id])).get(id) ?? 0;
}

const notFound = () => new ApiError('NOT_FOUND', 'No category with that id in this store.');

/** The category of the path id, or 404 NOT_FOUND (another store's category too: no existence oracle). */
export async function requireCategory(db: Db, storeId: string, pathId: string): Promise<CategoryRow> {
  const id = categoryIdOf(pathId);
  const row = id === undefined ? undefined : await findCategory(db, storeId, id);
  if (!row) throw notFound();
  return row;
}

export async function getCategory(db: Db, storeId: string, pathId: string): Promise<{ row: CategoryRow; category: Category }> {
  const row = await requireCategory(db, storeId, pathId);
  return { row, category: categoryView(row, await productsCountOf(db, storeId, row.id)) };
}

export interface CategoryListQuery extends PageRequest {
  search?: string | undefined;
}

/** `%`, `_` and the escape character itself, escaped for `like … escape '!'`. */
const likeContaining = (text: string) => `%${nameKeyOf(text).replace(/[!%_]/g, (c) => `!${c}`)}%`;

/** One keyset page of the store's categories by ascending id, hidden ones included; `search` finds names containing it (any case). */
export async function listCategories(
  db: Db,
  cursorKey: Buffer,
  now: number,
  storeId: string,
  query: CategoryListQuery,
): Promise<{ data: Category[]; page: PageInfo }> {
  const { search } = query;
  const scope = { list: CATEGORY_LIST, storeId, filters: { search } };
  const { rows, page } = await keysetPage(cursorKey, now, scope, { limit: query.limit, cursor: query.cursor }, (afterId, take) => {
    const read = categories(db, storeId);
    if (search !== undefined) read.andWhereRaw('name_key like ? escape ?', [likeContaining(search), '!']);
    if (afterId !== undefined) read.andWhere('id', '>', afterId);
    return read.orderBy('id', 'asc').limit(take);
  });
  const counts = await productsCounts(db, storeId, rows.map((row) => row.id));
  return { data: rows.map((row) => categoryView(row, counts.get(row.id) ?? 0)), page };
}

// ---------------------------------------------------------------------------------------------
// Rules

const detail = (field: string, message: string): ErrorDetail => ({ location: 'body', field, message });

/** PostgreSQL refuses U+0000 in text; refuse it on both databases alike, as a validation failure. */
function refuseNul(body: Readonly<Record<string, unknown>>): void {
  const details = Object.entries(body)
    .filter(([, value]) => typeof value === 'string' && value.includes('\u0000'))
    .map(([field]) => detail(`/${field}`, 'must not contain the NUL character (U+0000)'));
  if (details.length > 0) throw new ApiError('VALIDATION_FAILED', 'The request is not valid.', { details });
}

const nameTaken = (name: string, holder: number) =>
  new ApiError('CATEGORY_NAME_TAKEN', `A category named '${name.slice(0, 100)}' already exists in this store.`, {
    details: [detail('/name', `is already the name of category ${holder} (names compare case-insensitively)`)],
  });

const slugTaken = (holder?: number) =>
  new ApiError('SLUG_TAKEN', 'Another category of this store already has this slug.', {
    details: [detail('/slug', holder === undefined ? 'is already taken' : `is already the slug of category ${holder}`)],
  });

const parentInvalid = (message: string, reason: string) =>
  new ApiError('CATEGORY_PARENT_INVALID', message, { details: [detail('/parent_id', reason)] });

async function requireNameFree(db: Db, storeId: string, name: string, self?: number): Promise<void> {
  const holder = await findCategoryByName(db, storeId, name);
  if (holder && holder.id !== self) throw nameTaken(name, holder.id);
}

async function requireSlugFree(db: Db, storeId: string, slug: string, self?: number): Promise<void> {
  const holder = await findCategoryBySlug(db, storeId, slug);
  if (holder && holder.id !== self) throw slugTaken(holder.id);
}

/** The parent exists in the store and, for an existing category, is neither itself nor one of its descendants. */
async function requireValidParent(db: Db, storeId: string, parentId: number, self?: number): Promise<void> {
  if (parentId === self) throw parentInvalid(`Category ${parentId} cannot be its own parent.`, 'is the category itself');
  let current = await findCategory(db, storeId, parentId);
  if (!current) throw parentInvalid(`There is no category ${parentId} in this store.`, 'is not a category of this store');
  if (self === undefined) return;
  for (let depth = 0; current && depth < MAX_DEPTH; depth += 1) {
    if (current.parent_id === self) {
      throw parentInvalid(`Category ${parentId} cannot be the parent: it is a descendant of this category.`, 'would make a cycle');
    }
    current = current.parent_id === null ? undefined : await findCategory(db, storeId, current.parent_id);
  }
  if (current) throw parentInvalid(`Category ${parentId} has too deep a chain of parents.`, 'would make too deep a tree');
}

type UniqueColumn = 'name' | 'slug';

/** Which of the category's unique indexes a write broke (a concurrent writer won the race), if any. */
function brokenUnique(error: unknown): UniqueColumn | undefined {
  const text = brokenUniqueIndex(error);
  if (text === undefined) return undefined;
  if (text.includes('name_key')) return 'name';
  if (text.includes('slug')) return 'slug';
  return undefined;
}

/** Runs `write`; a unique index it breaks becomes CATEGORY_NAME_TAKEN or SLUG_TAKEN. */
async function guardUnique<T>(write: () => Promise<T>, name: string | undefined): Promise<T> {
  try {
    return await write();
  } catch (error) {
    const column = brokenUnique(error);
    if (column === 'name') {
      throw new ApiError('CATEGORY_NAME_TAKEN', `A category named '${(name ?? '').slice(0, 100)}' already exists in this store.`, {
        details: [detail('/name', 'is already the name of another category (names compare case-insensitively)')],
      });
    }
    if (column === 'slug') throw slugTaken();
    throw error;
  }
}

/**
 * On PostgreSQL, serialises the parent changes of one store for the rest of the transaction, so two
 * concurrent moves cannot make a cycle together (SQLite runs one transaction at a time anyway).
 */
async function lockStoreTree(trx: Knex.Transaction, storeId: string): Promise<void> {
  if (trx.client.config.client === 'pg') await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`categories-tree:${storeId}`]);
}

// ---------------------------------------------------------------------------------------------
// Writes

export interface CategoryWriteContext {
  storeId: string;
  now: number;
}

/** Creates a category (`active`, position 0 and top-level unless the body says otherwise). */
export async function createCategory(db: Db, { storeId, now }: CategoryWriteContext, body: CategoryCreateInput): Promise<CategoryRow> {
  refuseNul(body);
  return inTransaction(db, async (trx) => {
    const parentId = body.parent_id ?? null;
    if (parentId !== null) await requireValidParent(trx, storeId, parentId);
    await requireNameFree(trx, storeId, body.name);
    if (body.slug !== undefined) await requireSlugFree(trx, storeId, body.slug);
    const row: Omit<CategoryRow, 'id'> = {
      store_id: storeId,
      name: body.name,
      name_key: nameKeyOf(body.name),
      slug: body.slug ?? null,
      description: body.description ?? null,
      parent_id: parentId,
      sort_order: body.sort_order ?? 0,
      status: body.status ?? 'active',
      image: body.image ?? null,
      seo_title: body.seo_title ?? null,
      seo_description: body.seo_description ?? null,
      resource_version: 1,
      created_at: now,
      updated_at: now,
    };
    const [inserted] = (await guardUnique(() => trx('categories').insert(row, ['id']), body.name)) as ({ id: number } | number)[];
    const id = typeof inserted === 'number' ? inserted : Number(inserted?.id);
    return { id, ...row };
  });
}

export interface CategoryUpdateContext extends CategoryWriteContext {
  /** The server's ETag key and the request's `If-Match`. */
  etagKey: Buffer;
  ifMatch: string | undefined;
}

const STALE_MESSAGE = "If-Match is not the category's current ETag; read it again and retry.";

/** 412 PRECONDITION_FAILED with the current ETag in the body and in the `ETag` header. */
function preconditionFailed(etagKey: Buffer, row: CategoryRow): ApiError {
  const etag = categoryEtag(etagKey, row);
  return new ApiError('PRECONDITION_FAILED', STALE_MESSAGE, { current_etag: etag });
}

/** Passes when `If-Match` is the row's current ETag; 428 without it, 412 (with the current ETag) when stale. */
function requireCurrentTag(etagKey: Buffer, ifMatch: string | undefined, row: CategoryRow): void {
  try {
    requireCurrent(etagKey, ifMatch, categoryTag(row));
  } catch (error) {
    if (isApiError(error) && error.code === 'PRECONDITION_FAILED') throw preconditionFailed(etagKey, row);
    throw error;
  }
}

function changesOf(body: CategoryUpdate): Partial<CategoryRow> {
  const changes: Partial<CategoryRow> = {};
  if (body.name !== undefined) Object.assign(changes, { name: body.name, name_key: nameKeyOf(body.name) });
  if (body.slug !== undefined) changes.slug = body.slug;
  if (body.description !== undefined) changes.description = body.description;
  if (body.parent_id !== undefined) changes.parent_id = body.parent_id;
  if (body.sort_order !== undefined) changes.sort_order = body.sort_order;
  if (body.status !== undefined) changes.status = body.status;
  if (body.image !== undefined) changes.image = body.image;
  if (body.seo_title !== undefined) changes.seo_title = body.seo_title;
  if (body.seo_description !== undefined) changes.seo_description = body.seo_description;
  return changes;
}

/**
 * Applies the body's changes when `If-Match` is the category's current ETag (428 without it, 412
 * when stale). The write is conditional on the version read, so of two updates sent with the same
 * ETag exactly one succeeds. Raises `resource_version` and `updated_at`.
 */
export async function updateCategory(
  db: Db,
  { storeId, now, etagKey, ifMatch }: CategoryUpdateContext,
  pathId: string,
  body: CategoryUpdate,
): Promise<{ row: CategoryRow; category: Category }> {
  return inTransaction(db, async (trx) => {
    const current = await requireCategory(trx, storeId, pathId);
    requireCurrentTag(etagKey, ifMatch, current);
    refuseNul(body);
    if (body.name !== undefined) await requireNameFree(trx, storeId, body.name, current.id);
    if (body.slug !== undefined && body.slug !== null) await requireSlugFree(trx, storeId, body.slug, current.id);
    if (body.parent_id !== undefined && body.parent_id !== null && body.parent_id !== current.parent_id) {
      await lockStoreTree(trx, storeId);
      await requireValidParent(trx, storeId, body.parent_id, current.id);
    }
    const changes = { ...changesOf(body), resource_version: current.resource_version + 1, updated_at: now };
    const updated = await guardUnique(
      () => trx('categories').where({ id: current.id, store_id: storeId, resource_version: current.resource_version }).update(changes),
      body.name,
    );
    const row = await requireCategory(trx, storeId, String(current.id));
    if (updated !== 1) throw preconditionFailed(etagKey, row); // another update won the race since the read
    return { row, category: categoryView(row, await productsCountOf(trx, storeId, row.id)) };
  });
}
