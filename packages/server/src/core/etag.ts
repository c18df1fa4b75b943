import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from './errors';

/** What a concurrency token names: one version of one resource of one store. */
export interface TaggedResource {
  storeId: string;
  /** The resource type (`product`, `category`, `price`, …). */
  type: string;
  id: string | number;
  /** `resource_version`: rises on every change. */
  version: number;
}

/** A versioned store record as its ETag sees it. */
export interface VersionedRecord {
  readonly store_id: string;
  readonly id: number;
  readonly resource_version: number;
}

/** What the ETags of one type of versioned record name: this version of this record of this store. */
export const versionedTag =
  (type: string) =>
  (row: VersionedRecord): TaggedResource => ({ storeId: row.store_id, type, id: row.id, version: row.resource_version });

const SEPARATOR = '|';

function assertTaggable({ storeId, type, id, version }: TaggedResource): void {
  if (!Number.isSafeInteger(version) || version < 0) throw new Error(`An ETag version is a non-negative integer, not ${version}`);
  // The fields are joined with `|`: none may contain it, so no two resources share a message.
  for (const part of [storeId, type, String(id)]) {
    if (part.length === 0 || part.includes(SEPARATOR)) throw new Error(`An ETag field may not be empty or contain "${SEPARATOR}"`);
  }
}

/**
 * The resource's strong ETag, quotes included: `"p1.<version>.<43 base64url chars>"`, the 43
 * characters being HMAC-SHA256(key, `storeId|type|id|version`). Without the key a tag cannot be
 * forged, nor moved to another resource, store or version.
 */
export function etagOf(key: Buffer, resource: TaggedResource): string {
  assertTaggable(resource);
  const { storeId, type, id, version } = resource;
  const mac = createHmac('sha256', key)
    .update([storeId, type, String(id), String(version)].join(SEPARATOR))
    .digest('base64url');
  return `"p1.${version}.${mac}"`;
}

const ENTITY_TAG = /\s*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)/y;

/** The entity tags an `If-Match` value lists (`"a"`, `"a", "b"`, `W/"a"`); undefined when malformed or `*`. */
export function parseIfMatch(header: string): { weak: boolean; tag: string }[] | undefined {
  const tags: { weak: boolean; tag: string }[] = [];
  const item = new RegExp(ENTITY_TAG.source, 'y');
  let position = 0;
  while (position < header.length) {
    item.lastIndex = position;
    const match = item.exec(header);
    if (!match) return undefined;
    tags.push({ weak: match[1] !== undefined, tag: match[2] as string });
    position = item.lastIndex;
  }
  return tags.length > 0 ? tags : undefined;
}

function sameTag(candidate: string, expected: string): boolean {
  const a = Buffer.from(candidate, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Passes when `If-Match` names the resource's current ETag (strong comparison: a weak tag never
 * matches; in a list any one current tag suffices; `*` is not accepted). Otherwise 412
 * PRECONDITION_FAILED carrying `current_etag`; a missing header is 428 PRECONDITION_REQUIRED.
 * Tags are compared in constant time.
 */
export function requireCurrent(key: Buffer, ifMatchHeader: string | undefined, current: TaggedResource): void {
  if (ifMatchHeader === undefined) {
    throw new ApiError('PRECONDITION_REQUIRED', "This update needs an If-Match header with the resource's ETag.");
  }
  const expected = etagOf(key, current);
  const tags = parseIfMatch(ifMatchHeader) ?? [];
  // Every listed tag is compared, so the time taken does not depend on which one matched.
  const matches = tags.map(({ weak, tag }) => sameTag(tag, expected) && !weak);
  if (!matches.includes(true)) {
    throw new ApiError('PRECONDITION_FAILED', "If-Match is not the resource's current ETag; read it again and retry.", { current_etag: expected });
  }
}
