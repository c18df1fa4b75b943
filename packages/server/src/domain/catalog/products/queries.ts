import { ApiError } from '../../../core/errors';
import {
  boundAfter,
  type KeysetAfter,
  keysetPage,
  type ListRequest,
  type ListScope,
  type Page,
  pageStartOf,
  syncWalkOf,
  type Walk,
  walkOrder,
} from '../../../core/paging';
import { type ReadAhead, SqlConditions, type SqlValue, type Statement, selectRows } from '../../../db/reads';
import type { Db } from '../../../db/transactions';
import { slugConflict } from '../../common/slugs';
import { likeContaining, nameKeyOf } from '../../common/text';
import type { VersionedResource } from '../../common/versioned';
import { findCategoryByName } from '../categories/queries';
import { type Product, type ProductRecord, type ProductStatus, type ProductViewRow, productNotFound, VIEW_COLUMNS } from './row';
import { viewOfRow } from './view';

/** The store's products, each with its category's name: one query reads both (plain SQL: every read makes it). */
const FROM_PRODUCTS_WITH_CATEGORY = `
  from products p
  left join categories c on c.id = p.category_id and c.store_id = p.store_id
  where p.store_id = ?`;

const PRODUCT_SQL = `select p.*, c.name as category_name ${FROM_PRODUCTS_WITH_CATEGORY} and p.id = ?`;

/** A page reads only what the views need (each value read costs, 26 rows a page). */
const PAGE_SQL = `select ${VIEW_COLUMNS.map((column) => `p.${column}`).join(', ')}, c.name as category_name ${FROM_PRODUCTS_WITH_CATEGORY}`;

/** The statement that reads the store's product with its category's name (what products.get reads ahead). */
export const productRead = (storeId: string, id: number): Statement => ({ sql: PRODUCT_SQL, params: [storeId, id] });

/** The store's product with its category's name; undefined when absent or another store's. */
export async function findProduct(db: Db, storeId: string, id: number, readAhead?: ReadAhead): Promise<ProductRecord | undefined> {
  const { sql, params } = productRead(storeId, id);
  const [row] = (readAhead?.rows as readonly ProductRecord[] | undefined) ?? (await selectRows<ProductRecord>(db, sql, params));
  return row;
}

/** Products on the write path: a broken slug index is SLUG_TAKEN. */
export const productResource: VersionedResource<ProductRecord> = {
  table: 'products',
  find: findProduct,
  notFound: productNotFound,
  uniqueConflict: slugConflict('product'),
};

/** The product, or 404 (another store's too: no existence oracle); from `readAhead` when products.get read it with the token's statement. */
export async function getProduct(db: Db, storeId: string, id: number, readAhead?: ReadAhead): Promise<ProductRecord> {
  const found = await findProduct(db, storeId, id, readAhead);
  if (!found) throw productNotFound();
  return found;
}

/** The category's id by name, case-insensitively (names are unique per store that way); 422 CATEGORY_NOT_FOUND. */
export async function categoryIdByName(db: Db, storeId: string, name: string): Promise<number> {
  const category = await findCategoryByName(db, storeId, name);
  if (!category) throw new ApiError('CATEGORY_NOT_FOUND', `No category named "${name}" in this store.`);
  return Number(category.id);
}

export interface ProductFilters {
  status?: ProductStatus | undefined;
  /** A category name (case-insensitive); no such category means no products. */
  category?: string | undefined;
  /** Text the name contains, case-insensitively. */
  search?: string | undefined;
  /** Only products with `updated_at` after this instant (RFC 3339, as the request gave it). */
  updated_since?: string | undefined;
}

/**
 * `products.list`: one keyset page of the store's products matching every filter, by ascending id
 * (given `updated_since`, by `updated_at` and id), each with its category's name. Reads the
 * `(store_id, …, id)` indexes, never OFFSET.
 */
export function listProducts(db: Db, storeId: string, filters: ProductFilters, request: ListRequest, readAhead?: ReadAhead): Promise<Page<Product>> {
  const { walk, updatedAfter } = syncWalkOf(filters.updated_since);
  const read = async (after: KeysetAfter | undefined, take: number) => {
    // The page read ahead is this one: firstProductPageRead built it from the same request.
    if (readAhead) return readAhead.rows as readonly (ProductViewRow & { id: number })[];
    const { sql, params } = productPageRead(storeId, filters, updatedAfter, walk, after, take);
    return selectRows<ProductViewRow & { id: number }>(db, sql, params);
  };
  return keysetPage(request, productListScope(storeId, filters), walk, read, (rows) => rows.map(viewOfRow));
}

/** What products.list reads first: its page's statement. Throws what the list would answer: a bad `updated_since` or cursor. */
export function firstProductPageRead(storeId: string, filters: ProductFilters, request: ListRequest): Statement {
  const { walk, updatedAfter } = syncWalkOf(filters.updated_since);
  const { after, take } = pageStartOf(request, productListScope(storeId, filters), walk);
  return productPageRead(storeId, filters, updatedAfter, walk, after, take);
}

/** A products.list cursor holds its list, its store and its filters: it serves no other. */
const productListScope = (storeId: string, filters: ProductFilters): ListScope => ({ list: 'products.list', storeId, filters: { ...filters } });

/** A page of products: the filters (AND), after the walk's last key, this many rows. */
function productPageRead(
  storeId: string,
  filters: ProductFilters,
  updatedAfter: number | undefined,
  walk: Walk,
  after: KeysetAfter | undefined,
  take: number,
): { sql: string; params: SqlValue[] } {
  const where = new SqlConditions(storeId);
  if (filters.status !== undefined) where.and('p.status = ?', filters.status);
  if (filters.category !== undefined)
    where.and('p.category_id in (select id from categories where store_id = ? and name_key = ?)', storeId, nameKeyOf(filters.category));
  if (filters.search !== undefined) where.and("lower(p.name) like ? escape '!'", likeContaining(filters.search.toLowerCase()));
  if (updatedAfter !== undefined) where.and('p.updated_at > ?', updatedAfter);
  if (after !== undefined) where.bound(boundAfter(walk, after, 'p'));
  return { sql: `${PAGE_SQL}${where.sql} order by ${walkOrder(walk, 'p')} limit ?`, params: [...where.params, take] };
}
