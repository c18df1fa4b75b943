import type { Knex } from 'knex';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, syncWalkOf, walkOrder } from '../../../core/paging';
import type { Db } from '../../../db/transactions';
import { slugConflict } from '../../common/slugs';
import { likeContaining, nameKeyOf } from '../../common/text';
import type { VersionedResource } from '../../common/versioned';
import { type Category, type CategoryRecord, type CategoryRow, categoryNameTaken, categoryNotFound } from './row';
import { categoryView } from './view';

const categories = (db: Db, storeId: string) => db<CategoryRow>('categories').where('store_id', storeId);

/** The store's category with this name, compared case-insensitively (how products name their category). */
export const findCategoryByName = (db: Db, storeId: string, name: string): Promise<CategoryRow | undefined> =>
  categories(db, storeId).andWhere('name_key', nameKeyOf(name)).first();

/** How many of the store's products are in each of these categories (0 for none). */
async function productsCounts(db: Db, storeId: string, ids: readonly number[]): Promise<Map<number, number>> {
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

async function withCounts(db: Db, storeId: string, rows: readonly CategoryRow[]): Promise<CategoryRecord[]> {
  const counts = await productsCounts(
    db,
    storeId,
    rows.map((row) => row.id),
  );
  return rows.map((row) => ({ ...row, products_count: counts.get(row.id) ?? 0 }));
}

/** The store's category with its products count; undefined when absent or another store's. */
export async function findCategory(db: Db, storeId: string, id: number): Promise<CategoryRecord | undefined> {
  const row = await categories(db, storeId).andWhere('id', id).first();
  return row && (await withCounts(db, storeId, [row]))[0];
}

/** Categories on the write path: a broken name or slug index is CATEGORY_NAME_TAKEN or SLUG_TAKEN. */
export const categoryResource: VersionedResource<CategoryRecord> = {
  table: 'categories',
  find: findCategory,
  notFound: categoryNotFound,
  uniqueConflict: (index) => (index.includes('name_key') ? categoryNameTaken() : slugConflict('category')(index)),
};

/** `categories.get`: the category, or 404 (another store's too: no existence oracle). */
export async function getCategory(db: Db, storeId: string, id: number): Promise<CategoryRecord> {
  const found = await findCategory(db, storeId, id);
  if (!found) throw categoryNotFound();
  return found;
}

export interface CategoryFilters {
  /** Text the name contains, in any case. */
  search?: string | undefined;
  /** Only categories with `updated_at` after this instant (RFC 3339); the walk is then by `(updated_at, id)`. */
  updated_since?: string | undefined;
}

/**
 * `categories.list`: one keyset page of the store's categories by ascending id (given
 * `updated_since`, by `updated_at` and id), hidden ones included.
 */
export function listCategories(db: Db, storeId: string, filters: CategoryFilters, request: ListRequest): Promise<Page<Category>> {
  const { search, updated_since } = filters;
  const scope = { list: 'categories.list', storeId, filters: { search, updated_since } };
  const { walk, updatedAfter } = syncWalkOf(updated_since);
  const read = (after: KeysetAfter | undefined, take: number): Knex.QueryBuilder<CategoryRow, CategoryRow[]> => {
    const rows = categories(db, storeId);
    if (search !== undefined) rows.andWhereRaw('name_key like ? escape ?', [likeContaining(nameKeyOf(search)), '!']);
    if (updatedAfter !== undefined) rows.andWhere('updated_at', '>', updatedAfter);
    if (after !== undefined) rows.andWhereRaw(...boundAfter(walk, after));
    return rows.orderByRaw(walkOrder(walk)).limit(take);
  };
  return keysetPage(request, scope, walk, read, async (rows) => (await withCounts(db, storeId, rows)).map(categoryView));
}
