import type { Db } from '../../../db/transactions';
import type { VersionedResource } from '../../common/versioned';
import { type ReviewRow, reviewNotAllowed, reviewNotFound } from './row';

export async function findReview(db: Db, storeId: string, id: number): Promise<ReviewRow | undefined> {
  return (await db<ReviewRow>('reviews').where({ store_id: storeId, id }).first()) as ReviewRow | undefined;
}

/** Reviews on the write path: the `(store_id, order_id, product_id)` index is one review of a product per order. */
export const reviewResource: VersionedResource<ReviewRow> = {
  table: 'reviews',
  find: findReview,
  notFound: reviewNotFound,
  uniqueConflict: (index) => (index.includes('order_id') ? reviewNotAllowed('the product of this order is already reviewed') : undefined),
};
