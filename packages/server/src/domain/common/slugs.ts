import { ApiError } from '../../core/errors';
import type { Db } from '../../db/transactions';

/**
 * Slugs are unique per store and per kind of resource (a product and a category may share one), held
 * by a `(store_id, slug)` unique index on each table. The check here gives the friendly error before
 * the write; the index decides races (`slugConflict`).
 */

/** 409 SLUG_TAKEN: `noun` is the kind of resource (`product`, `category`, `page`). */
export const slugTaken = (noun: string, holder?: number) =>
  new ApiError('SLUG_TAKEN', `Another ${noun} of this store already has this slug.`, {
    details: [
      {
        location: 'body',
        field: '/slug',
        message: holder === undefined ? `is already the slug of another ${noun}` : `is already the slug of ${noun} ${holder}`,
      },
    ],
  });

/** 409 SLUG_TAKEN when another row of the table (not `self`) in the store has the slug. */
export async function requireFreeSlug(db: Db, table: string, noun: string, storeId: string, slug: string, self?: number): Promise<void> {
  const holder = await db(table).where({ store_id: storeId, slug }).first<{ id: number } | undefined>('id');
  if (holder && Number(holder.id) !== self) throw slugTaken(noun, Number(holder.id));
}

/** The SLUG_TAKEN of a broken `(store_id, slug)` unique index (a concurrent writer took the slug first). */
export const slugConflict =
  (noun: string) =>
  (index: string): ApiError | undefined =>
    index.includes('slug') ? slugTaken(noun) : undefined;
