import { type CursorFilters, openCursor, sealCursor } from './cursor';
import { ApiError } from './errors';
import { PAGE_DEFAULT } from './limits';

/** Where a served page stands: whether more follow, its size, and the sealed cursor of the next. */
export interface PageInfo {
  hasMore: boolean;
  limit: number;
  nextCursor: string | null;
}

/** One page of a list: its items and where it stands. */
export interface Page<Item> {
  items: Item[];
  page: PageInfo;
}

/** What a list request asks: a page size (`pageDefault` when left out) and the cursor of a later page. */
export interface PageRequest {
  limit?: number | undefined;
  cursor?: string | undefined;
}

/** What seals and opens cursors: the server's cursor key and the request's time. */
export interface Pager {
  readonly key: Buffer;
  readonly now: number;
}

/** A list request as the domain takes it: the page asked for, and the pager that checks its cursor. */
export interface ListRequest extends PageRequest {
  readonly pager: Pager;
}

export interface ListScope {
  /** The list's name (its operationId, `products.list`, …): a cursor of one list is refused by another. */
  list: string;
  storeId: string;
  /** The filters the first page was asked with; a cursor only works with the same ones. */
  filters: CursorFilters;
}

/** Where a keyset page starts: after the cursor's last id (none for a first page), `limit + 1` rows, and the first page's time. */
export interface PageStart {
  afterId: number | undefined;
  take: number;
  firstPageAt: number;
}

/** Opens the request's cursor for this list: 400 INVALID_CURSOR (or CURSOR_EXPIRED) for one that is not this list's. */
export function pageStartOf(request: ListRequest, scope: ListScope): PageStart {
  const { key, now } = request.pager;
  const take = (request.limit ?? PAGE_DEFAULT) + 1;
  if (request.cursor === undefined) return { afterId: undefined, take, firstPageAt: now };
  const opened = openCursor(key, request.cursor, scope, now);
  const after = opened.after.id;
  if (typeof after !== 'number' || !Number.isSafeInteger(after)) throw new ApiError('INVALID_CURSOR', 'The cursor does not belong to this list.');
  return { afterId: after, take, firstPageAt: opened.firstPageAt };
}

/**
 * One keyset page ordered by `id`: reads `limit + 1` rows after the cursor's last id (the reader
 * must use an index and `id > after`, never OFFSET), and seals the next cursor with the list's
 * scope and the first page's time, so page N costs what page 1 does and a cursor expires 15 minutes
 * after its first page. Every list pages here, in the domain; handlers only pass the request through.
 */
export async function keysetPage<Row extends { id: number }, Item>(
  request: ListRequest,
  scope: ListScope,
  read: (afterId: number | undefined, take: number) => Promise<readonly Row[]>,
  view: (rows: readonly Row[]) => Promise<Item[]> | Item[],
): Promise<Page<Item>> {
  const { key } = request.pager;
  const { afterId, take, firstPageAt } = pageStartOf(request, scope);
  const limit = take - 1;
  const rows = await read(afterId, take);
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  const nextCursor = hasMore && last ? sealCursor(key, { ...scope, after: { id: last.id }, firstPageAt }) : null;
  return { items: await view(pageRows), page: { hasMore, limit, nextCursor } };
}
