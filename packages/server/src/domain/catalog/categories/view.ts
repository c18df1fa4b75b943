import { toIso } from '../../../core/clock';
import { versionedTag } from '../../../core/etag';
import { CATEGORY_ETAG_TYPE, type Category, type CategoryRecord } from './row';

/** The category as the API shows it. */
export function categoryView(row: CategoryRecord): Category {
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
    products_count: row.products_count,
    resource_version: row.resource_version,
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}

/** What the category's ETag names: this version of this category of this store. */
export const categoryTag = versionedTag(CATEGORY_ETAG_TYPE);
