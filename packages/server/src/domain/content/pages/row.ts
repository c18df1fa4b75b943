import type { components } from '@svc/contract';
import { ApiError } from '../../../core/errors';

/*
 * Content pages of a store. A page starts `draft`; publication moves it to `published` or
 * `hidden`, never back to `draft`, and stamps `published_at` the first time. The body is stored as
 * sanitised HTML (../html.ts), the excerpt as plain text. A slug is unique in its store. The
 * interface names no page events, so page changes write none.
 */

export type ContentPage = components['schemas']['Page'];
export type PageCreate = components['schemas']['PageCreate'];
export type PageUpdate = components['schemas']['PageUpdate'];
export type PageStatus = components['schemas']['PageStatus'];
export type PublishedStatus = components['schemas']['PagePublication']['status'];

export interface PageRow {
  id: number;
  store_id: string;
  title: string;
  title_key: string;
  slug: string | null;
  body: string;
  excerpt: string | null;
  status: PageStatus;
  published_at: number | null;
  seo_title: string | null;
  seo_description: string | null;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

/** The columns of a page a change may write. */
export type PageColumns = Omit<PageRow, 'id' | 'store_id' | 'resource_version' | 'created_at' | 'updated_at'>;

/** The resource type inside a page's ETag. */
export const PAGE_ETAG_TYPE = 'page';

/** The longest body the spec lets a page show (`Page.body` maxLength), checked again after sanitising. */
export const PAGE_BODY_MAX_LENGTH = 50_000;

export const pageNotFound = () => new ApiError('NOT_FOUND', 'No page with that id in this store.');
