import { ApiError } from './errors';
import { PAGE_DEFAULT } from './limits';
import { type CursorFilters, openCursor, sealCursor } from './cursor';

/** Where a served page stands: whether more follow, its size, and the sealed cursor of the next. */
export interface PageInfo {
  hasMore: boolean;
  limit: number;
  nextCursor: string | null;
}

export interface PageRequest {
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface ListScope {
  /** The list's name (`products`, `categories`, …): a cursor of one list is refused by another. */
  list: string;
  storeId: string;
  /** The filters the first page was asked with; a cursor only works with the same ones. */
  filters: CursorFilters;
}

/**
 * One keyset page ordered by `id`: reads `limit + 1` rows after the cursor's last id (the reader
 * must use an index and `id > after`, never OFFSET), and seals the next cursor with the list's
 * scope and the first page's time, so page N costs what page 1 does and a cursor expires 15 minutes
 * after its first page (DESIGN.md § 5).
 */
export async function keysetPage<Row extends { id: number }>(
  key: Buffer,
  now: number,
  scope: ListScope,
  request: PageRequest,
  read: (afterId: number | undefined, take: number) => Promise<readonly Row[]>,
): Promise<{ rows: readonly Row[]; page: PageInfo }> {
  const limit = request.limit ?? PAGE_DEFAULT;
  let afterId: number | undefined;
  let firstPageAt = now;
  if (request.cursor !== undefined) {
    const opened = openCursor(key, request.cursor, scope, now);
    const after = opened.after.id;
    if (typeof after !== 'number' || !Number.isSafeInteger(after)) throw new ApiError('INVALID_CURSOR', 'The cursor does not belong to this list.');
    afterId = after;
    firstPageAt = opened.firstPageAt;
  }
  const rows = await read(afterId, limit + 1);
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  const nextCursor = hasMore && last ? sealCursor(key, { ...scope, after: { id: last.id }, firstPageAt }) : null;
  return { rows: pageRows, page: { hasMore, limit, nextCursor } };
}
