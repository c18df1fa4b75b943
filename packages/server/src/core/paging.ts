import { type CursorFilters, type CursorKey, openCursor, sealCursor } from './cursor';
import { ApiError } from './errors';
import { parseDateTimeFilter } from './instants';
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
  /** Where this page is read, with read replicas (`CursorState.readOn`): the next cursor keeps the walk there. */
  readonly readOn?: string | undefined;
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

/** A column of a walk's sort key, with the type its cursor value must have. */
export interface KeyColumn {
  readonly name: string;
  readonly type: 'number' | 'string';
}

/**
 * The order a list walks in: its sort key (the last column unique, so that no two rows tie) and the
 * direction. Every list walks `BY_ID`; given `updated_since` it walks `BY_UPDATE`, so that a record
 * changed during the walk moves behind the cursor and is served again later in the same walk, never
 * skipped (docs/decisions/0069-incremental-lists.md). The events feed walks newest first.
 */
export interface Walk {
  readonly key: readonly [KeyColumn, ...KeyColumn[]];
  readonly direction: 'asc' | 'desc';
}

export const BY_ID: Walk = { key: [{ name: 'id', type: 'number' }], direction: 'asc' };
export const BY_UPDATE: Walk = {
  key: [
    { name: 'updated_at', type: 'number' },
    { name: 'id', type: 'number' },
  ],
  direction: 'asc',
};
/** Newest first: the events feed, by when each event occurred, then its id (a UUID: text and PostgreSQL's uuid order it alike). */
export const NEWEST_FIRST: Walk = {
  key: [
    { name: 'occurred_at', type: 'number' },
    { name: 'id', type: 'string' },
  ],
  direction: 'desc',
};
/** A subscription's delivery log, newest event first: `NEWEST_FIRST` over the deliveries' copy of their event's time and id. */
export const NEWEST_EVENT_FIRST: Walk = {
  key: [
    { name: 'event_occurred_at', type: 'number' },
    { name: 'event_id', type: 'string' },
  ],
  direction: 'desc',
};

/** How a list walks for its `updated_since`: the walk, and the instant (epoch ms) rows must be updated after. */
export interface SyncWalk {
  readonly walk: Walk;
  /** Only rows with `updated_at` strictly after it; undefined without `updated_since`. */
  readonly updatedAfter: number | undefined;
}

/**
 * The walk of a list given its `updated_since` filter as the request wrote it: without it `BY_ID`;
 * with it `BY_UPDATE` after that instant (strictly: a row updated at the instant itself is left
 * out, so a client asking again with the largest `updated_at` it saw does not get that row again).
 * 400 INVALID_FILTER for a value that is no RFC 3339 instant. Every list whose records change takes
 * it (the spec's `UpdatedSince` parameter); the list adds `updated_at > updatedAfter` to its read.
 */
export function syncWalkOf(updatedSince: string | undefined): SyncWalk {
  if (updatedSince === undefined) return { walk: BY_ID, updatedAfter: undefined };
  return { walk: BY_UPDATE, updatedAfter: parseDateTimeFilter('updated_since', updatedSince) };
}

/** The sort key of the last row a page served: the next page starts after it. */
export type KeysetAfter = CursorKey;

/** Where a keyset page starts: after the cursor's last key (none for a first page), `limit + 1` rows, and the first page's time. */
export interface PageStart {
  after: KeysetAfter | undefined;
  take: number;
  firstPageAt: number;
}

const qualified = (alias: string, column: string) => (alias === '' ? column : `${alias}.${column}`);

/**
 * The condition that starts a page after `after` in the walk's order, as one row-value comparison
 * (`(updated_at, id) > (?, ?)`), which PostgreSQL reads as a range of the `(store_id, updated_at,
 * id)` index (db/migrations/016_sync_indexes); as knex's `whereRaw` takes it. SQLite reads the same
 * index from `updated_at` on: `id` is its rowid, which it does not range over inside a row value, so
 * rows of the cursor's very millisecond that come before it are stepped over in the index, not read.
 * Columns are qualified with `alias` when given.
 */
export function boundAfter(walk: Walk, after: KeysetAfter, alias = ''): [sql: string, values: (string | number)[]] {
  const columns = walk.key.map((column) => qualified(alias, column.name));
  const values = walk.key.map((column) => after[column.name] as string | number);
  const placeholders = values.map(() => '?').join(', ');
  return [`(${columns.join(', ')}) ${walk.direction === 'asc' ? '>' : '<'} (${placeholders})`, values];
}

/** The walk's `order by` list: `updated_at asc, id asc`. */
export const walkOrder = (walk: Walk, alias = ''): string => walk.key.map((column) => `${qualified(alias, column.name)} ${walk.direction}`).join(', ');

/** The cursor's key, when it has exactly the walk's columns with their types (a key of another walk is another list's cursor). */
function keyOfWalk(walk: Walk, after: CursorKey): KeysetAfter | undefined {
  if (Object.keys(after).length !== walk.key.length) return undefined;
  for (const column of walk.key) {
    const value = after[column.name];
    const fits = column.type === 'number' ? typeof value === 'number' && Number.isSafeInteger(value) : typeof value === 'string';
    if (!fits) return undefined;
  }
  return after;
}

/** Opens the request's cursor for this list: 400 INVALID_CURSOR (or CURSOR_EXPIRED) for one that is not this list's. */
export function pageStartOf(request: ListRequest, scope: ListScope, walk: Walk = BY_ID): PageStart {
  const { key, now } = request.pager;
  const take = (request.limit ?? PAGE_DEFAULT) + 1;
  if (request.cursor === undefined) return { after: undefined, take, firstPageAt: now };
  const opened = openCursor(key, request.cursor, scope, now);
  const after = keyOfWalk(walk, opened.after);
  if (!after) throw new ApiError('INVALID_CURSOR', 'The cursor does not belong to this list.');
  return { after, take, firstPageAt: opened.firstPageAt };
}

/**
 * One keyset page in the walk's order: reads `limit + 1` rows after the cursor's last key (the
 * reader must use an index and `afterCondition`, never OFFSET), and seals the next cursor with the
 * list's scope, the last row's key and the first page's time, so page N costs what page 1 does and a
 * cursor expires 15 minutes after its first page. Every list pages here, in the domain; handlers only
 * pass the request through.
 */
export async function keysetPage<Row extends object, Item>(
  request: ListRequest,
  scope: ListScope,
  walk: Walk,
  read: (after: KeysetAfter | undefined, take: number) => Promise<readonly Row[]>,
  view: (rows: readonly Row[]) => Promise<Item[]> | Item[],
): Promise<Page<Item>> {
  const { key } = request.pager;
  const { after, take, firstPageAt } = pageStartOf(request, scope, walk);
  const limit = take - 1;
  const rows = await read(after, take);
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  const nextCursor = hasMore && last ? sealCursor(key, { ...scope, after: keyOfRow(walk, last), firstPageAt, readOn: request.pager.readOn }) : null;
  return { items: await view(pageRows), page: { hasMore, limit, nextCursor } };
}

/** The walk's key of a row as read (PostgreSQL's bigint ids may arrive as text: numbers are numbers). */
function keyOfRow(walk: Walk, row: object): CursorKey {
  const value = (name: string) => (row as Record<string, unknown>)[name];
  return Object.fromEntries(walk.key.map((column) => [column.name, column.type === 'number' ? Number(value(column.name)) : String(value(column.name))]));
}
