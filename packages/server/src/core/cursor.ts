import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from './errors';

/** A cursor works for 15 minutes after the list's first page. */
export const CURSOR_TTL_MS = 15 * 60 * 1000;
/** The interface's limit on `cursor`. */
export const CURSOR_MAX_LENGTH = 4096;

/** A flat value of a filter or a sort key. */
export type CursorValue = string | number | null;
/** The list's filters as the request gave them; undefined means "not given" (the same as absent). */
export type CursorFilters = Readonly<Record<string, CursorValue | undefined>>;
/** The sort key of the last row served (`{id: 123}`): the next page starts after it. */
export type CursorKey = Readonly<Record<string, CursorValue>>;

/** What a cursor is valid for: one list, of one store, with one set of filters. */
export interface CursorScope {
  /** The list's name, e.g. its operationId `products.list`. */
  list: string;
  storeId: string;
  filters: CursorFilters;
}

export interface CursorState extends CursorScope {
  after: CursorKey;
  /** When the list's first page was served (epoch ms): the cursor expires CURSOR_TTL_MS after. */
  firstPageAt: number;
  /**
   * Where the walk's pages are read, with read replicas: `primary` or a replica's name. A walk stays
   * where it began (or moves to the primary, which is ahead of every replica), so that no page reads
   * an older state than the one before it (docs/decisions/0078-read-replicas.md).
   */
  readOn?: string | undefined;
}

interface Payload {
  v: 1;
  list: string;
  store: string;
  filters: [string, CursorValue][];
  after: [string, CursorValue][];
  first: number;
  on?: string;
}

const FORMAT = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;

/** Entries sorted by key, undefined dropped: equal filter sets have one form. */
function canonical(record: Readonly<Record<string, CursorValue | undefined>>): [string, CursorValue][] {
  return Object.keys(record)
    .sort()
    .flatMap((name) => {
      const value = record[name];
      return value === undefined ? [] : [[name, value] as [string, CursorValue]];
    });
}

const tagOf = (key: Buffer, body: string): string => createHmac('sha256', key).update(`svc cursor v1\n${body}`).digest('base64url');

/** The opaque `next_cursor`: base64url JSON of the scope, the last key and the first-page time, plus an HMAC tag. */
export function sealCursor(key: Buffer, state: CursorState): string {
  const payload: Payload = {
    v: 1,
    list: state.list,
    store: state.storeId,
    filters: canonical(state.filters),
    after: canonical(state.after),
    first: state.firstPageAt,
    // Only with read replicas: without them a cursor is what it always was.
    ...(state.readOn === undefined ? {} : { on: state.readOn }),
  };
  const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  const cursor = `${body}.${tagOf(key, body)}`;
  if (cursor.length > CURSOR_MAX_LENGTH) throw new Error(`A cursor of ${cursor.length} characters exceeds ${CURSOR_MAX_LENGTH}`);
  return cursor;
}

const invalid = () => new ApiError('INVALID_CURSOR', 'The cursor is not valid for this list.');

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

const isValue = (value: unknown): value is CursorValue => value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));

const isEntries = (value: unknown): value is [string, CursorValue][] =>
  Array.isArray(value) && value.every((entry) => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && isValue(entry[1]));

function isPayload(value: unknown): value is Payload {
  const payload = value as Partial<Payload> | null;
  return (
    typeof payload === 'object' &&
    payload !== null &&
    payload.v === 1 &&
    typeof payload.list === 'string' &&
    typeof payload.store === 'string' &&
    isEntries(payload.filters) &&
    isEntries(payload.after) &&
    typeof payload.first === 'number' &&
    Number.isSafeInteger(payload.first) &&
    (payload.on === undefined || (typeof payload.on === 'string' && payload.on.length <= 32))
  );
}

/** The payload of a cursor this server sealed with `key`; undefined for anything else. */
function unseal(key: Buffer, cursor: string): Payload | undefined {
  if (cursor.length > CURSOR_MAX_LENGTH) return undefined;
  const match = FORMAT.exec(cursor);
  if (!match) return undefined;
  const [, body = '', tag = ''] = match;
  if (!sameText(tag, tagOf(key, body))) return undefined;
  try {
    const payload: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    return isPayload(payload) ? payload : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Opens a cursor for the list, store and filters of this request. 400 INVALID_CURSOR when it
 * was altered, is malformed, or was issued for another list, store or set of filters; 400
 * CURSOR_EXPIRED once CURSOR_TTL_MS have passed since the list's first page.
 */
export function openCursor(key: Buffer, cursor: string, expected: CursorScope, now: number): { after: CursorKey; firstPageAt: number } {
  const payload = unseal(key, cursor);
  if (!payload) throw invalid();
  const sameScope =
    payload.list === expected.list && payload.store === expected.storeId && JSON.stringify(payload.filters) === JSON.stringify(canonical(expected.filters));
  if (!sameScope) throw invalid();
  if (now >= payload.first + CURSOR_TTL_MS) throw new ApiError('CURSOR_EXPIRED', 'The cursor expired; start again from the first page.');
  return { after: Object.fromEntries(payload.after), firstPageAt: payload.first };
}

/** Where the walk of a cursor this server sealed is read (`CursorState.readOn`); undefined for any other text. */
export function walkReadOn(key: Buffer, cursor: string): string | undefined {
  return unseal(key, cursor)?.on;
}
