import type { Reader } from '../../../core/field-scopes';
import { rowIdOf } from '../../../core/ids';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, syncWalkOf, walkOrder } from '../../../core/paging';
import { SqlConditions, selectRows } from '../../../db/reads';
import type { Db } from '../../../db/transactions';
import type { VersionedResource } from '../../common/versioned';
import { customersOfRows } from '../customers/queries';
import { type Review, type ReviewRow, type ReviewStatus, reviewNotAllowed, reviewNotFound } from './row';
import { reviewView } from './view';

const REVIEW_SQL = 'select * from reviews where store_id = ? and id = ?';

/** The store's review; undefined when absent or another store's. */
export async function findReview(db: Db, storeId: string, id: number): Promise<ReviewRow | undefined> {
  const [row] = await selectRows<ReviewRow>(db, REVIEW_SQL, [storeId, id]);
  return row;
}

/** Reviews on the write path: the `(store_id, order_id, product_id)` index is one review of a product per order. */
export const reviewResource: VersionedResource<ReviewRow> = {
  table: 'reviews',
  find: findReview,
  notFound: reviewNotFound,
  uniqueConflict: (index) => (index.includes('order_id') ? reviewNotAllowed('the product of this order is already reviewed') : undefined),
};

/** Reviews with their customers: one read of customers a page, whatever its size. */
async function reviewsView(db: Db, storeId: string, rows: readonly ReviewRow[], reader: Reader): Promise<Review[]> {
  if (rows.length === 0) return [];
  const customerOf = await customersOfRows(db, storeId, rows, 'Review');
  return rows.map((row) => reviewView(row, customerOf(row), reader));
}

/** The review as the interface shows it; the customer's contact details as `reader` may see them (`customers:read`). */
export async function reviewOf(db: Db, row: ReviewRow, reader: Reader): Promise<Review> {
  const [review] = await reviewsView(db, row.store_id, [row], reader);
  if (!review) throw new Error(`Review ${row.id} has no view`);
  return review;
}

/** The store's review as the interface shows it, or 404 (another store's too: no existence oracle). */
export async function getReview(db: Db, storeId: string, id: number, reader: Reader): Promise<Review> {
  const row = await findReview(db, storeId, id);
  if (!row) throw reviewNotFound();
  return reviewOf(db, row, reader);
}

/** The filters of `reviews.list`, as the request gives them (the spec validator has checked their form). */
export interface ReviewFilters {
  status?: ReviewStatus | undefined;
  /** The product's id as text (`^[1-9][0-9]*$`, up to 15 digits). */
  product_id?: string | undefined;
  /** Stars, 1 to 5. */
  rating?: number | undefined;
  /** Only reviews with `updated_at` after this instant (RFC 3339); the walk is then by `(updated_at, id)`. */
  updated_since?: string | undefined;
}

/**
 * `reviews.list`: one keyset page of the store's reviews matching every filter, by ascending id
 * (given `updated_since`, by `updated_at` and id), in every status. Each filter has its
 * `(store_id, …, id)` index, never OFFSET.
 */
export function listReviews(db: Db, storeId: string, filters: ReviewFilters, reader: Reader, request: ListRequest): Promise<Page<Review>> {
  // A product id beyond the id range names no product, so it has no reviews: an empty page.
  const productId = filters.product_id === undefined ? undefined : (rowIdOf(filters.product_id) ?? null);
  const { walk, updatedAfter } = syncWalkOf(filters.updated_since);
  const read = async (after: KeysetAfter | undefined, take: number): Promise<readonly ReviewRow[]> => {
    if (productId === null) return [];
    const where = new SqlConditions(storeId);
    if (filters.status !== undefined) where.and('status = ?', filters.status);
    if (productId !== undefined) where.and('product_id = ?', productId);
    if (filters.rating !== undefined) where.and('rating = ?', filters.rating);
    if (updatedAfter !== undefined) where.and('updated_at > ?', updatedAfter);
    if (after !== undefined) where.bound(boundAfter(walk, after));
    return selectRows<ReviewRow>(db, `select * from reviews where store_id = ?${where.sql} order by ${walkOrder(walk)} limit ?`, [...where.params, take]);
  };
  return keysetPage(request, { list: 'reviews.list', storeId, filters: { ...filters } }, walk, read, (rows) => reviewsView(db, storeId, rows, reader));
}
