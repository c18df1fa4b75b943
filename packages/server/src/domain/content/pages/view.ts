import { toIso } from '../../../core/clock';
import { versionedTag } from '../../../core/etag';
import { type ContentPage, PAGE_ETAG_TYPE, type PageRow } from './row';

/** The page as the API shows it. */
export function pageView(row: PageRow): ContentPage {
  return {
    id: row.id,
    title: row.title,
    slug: row.slug,
    body: row.body,
    excerpt: row.excerpt,
    status: row.status,
    published_at: row.published_at === null ? null : toIso(Number(row.published_at)),
    seo_title: row.seo_title,
    seo_description: row.seo_description,
    resource_version: row.resource_version,
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}

/** What the page's ETag names: this version of this page of this store. */
export const pageTag = versionedTag(PAGE_ETAG_TYPE);
