import type { Knex } from 'knex';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, syncWalkOf, walkOrder } from '../../../core/paging';
import type { Db } from '../../../db/transactions';
import { slugConflict } from '../../common/slugs';
import { likeContaining, nameKeyOf } from '../../common/text';
import type { VersionedResource } from '../../common/versioned';
import { type ContentPage, type PageRow, type PageStatus, pageNotFound } from './row';
import { pageView } from './view';

const pages = (db: Db, storeId: string) => db<PageRow>('pages').where('store_id', storeId);

/** The store's page; undefined when absent or another store's. */
export const findPage = (db: Db, storeId: string, id: number): Promise<PageRow | undefined> => pages(db, storeId).andWhere('id', id).first();

/** Pages on the write path: a broken slug index is SLUG_TAKEN. */
export const pageResource: VersionedResource<PageRow> = {
  table: 'pages',
  find: findPage,
  notFound: pageNotFound,
  uniqueConflict: slugConflict('page'),
};

/** `pages.get`: the page, or 404 (another store's too: no existence oracle). */
export async function getPage(db: Db, storeId: string, id: number): Promise<PageRow> {
  const found = await findPage(db, storeId, id);
  if (!found) throw pageNotFound();
  return found;
}

export interface PageFilters {
  /** Text the title contains, in any case. */
  search?: string | undefined;
  status?: PageStatus | undefined;
  /** Only pages with `updated_at` after this instant (RFC 3339); the walk is then by `(updated_at, id)`. */
  updated_since?: string | undefined;
}

/**
 * `pages.list`: one keyset page of the store's pages by ascending id (given `updated_since`, by
 * `updated_at` and id), in every status unless filtered.
 */
export function listPages(db: Db, storeId: string, filters: PageFilters, request: ListRequest): Promise<Page<ContentPage>> {
  const { search, status, updated_since } = filters;
  const scope = { list: 'pages.list', storeId, filters: { search, status, updated_since } };
  const { walk, updatedAfter } = syncWalkOf(updated_since);
  const read = (after: KeysetAfter | undefined, take: number): Knex.QueryBuilder<PageRow, PageRow[]> => {
    const rows = pages(db, storeId);
    if (status !== undefined) rows.andWhere('status', status);
    if (search !== undefined) rows.andWhereRaw('title_key like ? escape ?', [likeContaining(nameKeyOf(search)), '!']);
    if (updatedAfter !== undefined) rows.andWhere('updated_at', '>', updatedAfter);
    if (after !== undefined) rows.andWhereRaw(...boundAfter(walk, after));
    return rows.orderByRaw(walkOrder(walk)).limit(take);
  };
  return keysetPage(request, scope, walk, read, (rows) => rows.map(pageView));
}
