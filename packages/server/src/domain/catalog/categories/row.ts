import type { components } from '@svc/contract';
import { ApiError } from '../../../core/errors';

/*
 * Categories of a store. A name is unique in its store compared case-insensitively (`name_key` holds
 * the folded name under a unique index); a slug is unique in its store; a parent is another category
 * of the store that is not a descendant. Products point at their category by `category_id`, so a
 * renamed category's products follow the new name. The interface names no category events.
 */

export type Category = components['schemas']['Category'];
export type CategoryCreate = components['schemas']['CategoryCreate'];
/** A create body as the domain takes it: `sort_order` and `status` have defaults (0, `active`). */
export type CategoryCreateInput = Omit<CategoryCreate, 'sort_order' | 'status'> & Partial<Pick<CategoryCreate, 'sort_order' | 'status'>>;
export type CategoryUpdate = components['schemas']['CategoryUpdate'];

export interface CategoryRow {
  id: number;
  store_id: string;
  name: string;
  name_key: string;
  slug: string | null;
  description: string | null;
  parent_id: number | null;
  sort_order: number;
  status: Category['status'];
  image: string | null;
  seo_title: string | null;
  seo_description: string | null;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

/** A category row with the number of the store's products in it, as every category read is. */
export type CategoryRecord = CategoryRow & { products_count: number };

/** The columns of a category a client may change. */
export type CategoryColumns = Omit<CategoryRow, 'id' | 'store_id' | 'resource_version' | 'created_at' | 'updated_at'>;

/** The resource type inside a category's ETag. */
export const CATEGORY_ETAG_TYPE = 'category';

export const categoryNotFound = () => new ApiError('NOT_FOUND', 'No category with that id in this store.');

/**
 * 409 CATEGORY_NAME_TAKEN: names the holder when the check before the write found it, or says only
 * that another category has the name when the unique index refused a concurrent writer's.
 */
export function categoryNameTaken(holder?: { name: string; id: number }): ApiError {
  const message = holder
    ? `A category named '${holder.name.slice(0, 100)}' already exists in this store.`
    : 'Another category of this store already has this name.';
  const reason = holder ? `is already the name of category ${holder.id}` : 'is already the name of another category';
  return new ApiError('CATEGORY_NAME_TAKEN', message, {
    details: [{ location: 'body', field: '/name', message: `${reason} (names compare case-insensitively)` }],
  });
}
