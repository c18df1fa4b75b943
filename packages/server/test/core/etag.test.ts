import { randomBytes } from 'node:crypto';
import { etagOf, requireCurrent, type TaggedResource } from '../../src/core/etag';
import { apiErrorOf } from '../support/store-api';

const KEY = randomBytes(32);
const PRODUCT: TaggedResource = { storeId: '7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6', type: 'product', id: 1042, version: 7 };
/** The interface's form of an ETag, quotes included. */
const ETAG_FORM = /^"p1\.[0-9]+\.[A-Za-z0-9_-]{43}"$/;

const preconditionFailure = (ifMatch: string | undefined, current: TaggedResource = PRODUCT) => apiErrorOf(() => requireCurrent(KEY, ifMatch, current));

function expectPreconditionFailed(ifMatch: string, current: TaggedResource = PRODUCT): void {
  const error = preconditionFailure(ifMatch, current);
  expect(error).toMatchObject({ code: 'PRECONDITION_FAILED', status: 412 });
  expect(error.extras.current_etag).toBe(etagOf(KEY, current));
}

describe('ETag of a resource', () => {
  it('is a quoted p1 tag carrying the resource version and 43 base64url characters', () => {
    const etag = etagOf(KEY, PRODUCT);
    expect(etag).toMatch(ETAG_FORM);
    expect(etag.startsWith('"p1.7.')).toBe(true);
  });

  it('is the same for the same resource version and server key', () => {
    expect(etagOf(KEY, { ...PRODUCT })).toBe(etagOf(KEY, PRODUCT));
  });

  it('differs for another store, resource type, id, version or server key', () => {
    const tags = [
      etagOf(KEY, PRODUCT),
      etagOf(KEY, { ...PRODUCT, storeId: '0f4e8d2c-1a3b-4c5d-9e6f-7a8b9c0d1e2f' }),
      etagOf(KEY, { ...PRODUCT, type: 'category' }),
      etagOf(KEY, { ...PRODUCT, id: 1043 }),
      etagOf(KEY, { ...PRODUCT, version: 8 }),
      etagOf(randomBytes(32), PRODUCT),
    ];
    expect(new Set(tags).size).toBe(tags.length);
  });
});

describe('If-Match against the current ETag', () => {
  it('passes when If-Match is the current ETag', () => {
    expect(() => requireCurrent(KEY, etagOf(KEY, PRODUCT), PRODUCT)).not.toThrow();
  });

  it('passes when any tag of an If-Match list is the current ETag', () => {
    const stale = etagOf(KEY, { ...PRODUCT, version: 6 });
    expect(() => requireCurrent(KEY, `${stale}, ${etagOf(KEY, PRODUCT)}`, PRODUCT)).not.toThrow();
  });

  it('is PRECONDITION_FAILED (412) with current_etag when If-Match is an earlier version', () => {
    expectPreconditionFailed(etagOf(KEY, { ...PRODUCT, version: 6 }));
  });

  it('never accepts a tag moved from another resource, store or resource type', () => {
    for (const other of [
      { ...PRODUCT, id: 1043 },
      { ...PRODUCT, storeId: '0f4e8d2c-1a3b-4c5d-9e6f-7a8b9c0d1e2f' },
      { ...PRODUCT, type: 'category' },
    ]) {
      expectPreconditionFailed(etagOf(KEY, other));
    }
  });

  it('never accepts a forged tag: the right version with other characters, or one made with another key', () => {
    expectPreconditionFailed(`"p1.7.${'A'.repeat(43)}"`);
    expectPreconditionFailed(etagOf(randomBytes(32), PRODUCT));
  });

  it('compares strongly: a weak tag, the tag without quotes or with another case never matches', () => {
    const etag = etagOf(KEY, PRODUCT);
    expectPreconditionFailed(`W/${etag}`);
    expectPreconditionFailed(etag.slice(1, -1));
    expectPreconditionFailed(etag.toUpperCase());
  });

  it('does not accept "*"', () => {
    expectPreconditionFailed('*');
  });

  it('does not accept a malformed list even when it contains the current tag', () => {
    const etag = etagOf(KEY, PRODUCT);
    expectPreconditionFailed(`${etag} ${etag}`);
    expectPreconditionFailed(`${etag}x`);
  });

  it('is PRECONDITION_REQUIRED (428) when If-Match is missing', () => {
    expect(preconditionFailure(undefined)).toMatchObject({ code: 'PRECONDITION_REQUIRED', status: 428 });
  });
});
