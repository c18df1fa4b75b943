import { randomBytes } from 'node:crypto';
import { CURSOR_TTL_MS, type CursorState, openCursor, sealCursor, walkReadOn } from '../../src/core/cursor';
import { apiErrorOf } from '../support/store-api';

const KEY = randomBytes(32);
const FIRST_PAGE_AT = Date.parse('2026-11-22T09:00:00Z');
const STATE: CursorState = {
  list: 'products.list',
  storeId: '7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6',
  filters: { status: 'active', category: 'Perfumes', search: null, limit: 25 },
  after: { id: 123 },
  firstPageAt: FIRST_PAGE_AT,
};
const SCOPE = { list: STATE.list, storeId: STATE.storeId, filters: STATE.filters };
/** The spec's bounds for `cursor`: 1 to 4096 characters; opaque, URL-safe. */
const CURSOR_FORM = /^[A-Za-z0-9_.-]{1,4096}$/;

const open = (cursor: string, scope = SCOPE, now = FIRST_PAGE_AT + 1000) => openCursor(KEY, cursor, scope, now);
const failureOf = (cursor: string, scope = SCOPE, now = FIRST_PAGE_AT + 1000) => apiErrorOf(() => open(cursor, scope, now));

function expectInvalid(cursor: string, scope = SCOPE): void {
  expect(failureOf(cursor, scope)).toMatchObject({ code: 'INVALID_CURSOR', status: 400 });
}

/** The cursor with one character of its payload or tag replaced. */
function alter(cursor: string, index: number): string {
  const replacement = cursor[index] === 'A' ? 'B' : 'A';
  return `${cursor.slice(0, index)}${replacement}${cursor.slice(index + 1)}`;
}

describe('keyset cursor', () => {
  const cursor = sealCursor(KEY, STATE);

  it('is an opaque URL-safe string within the 4096-character limit', () => {
    expect(cursor).toMatch(CURSOR_FORM);
    expect(cursor).not.toContain('Perfumes');
  });

  it('opens to the last key served and the first page time, for the same list, store and filters', () => {
    expect(open(cursor)).toEqual({ after: { id: 123 }, firstPageAt: FIRST_PAGE_AT });
  });

  it('treats filters as a set: their order and filters not given do not matter', () => {
    const reordered = { limit: 25, search: null, category: 'Perfumes', status: 'active', updated_since: undefined };
    expect(open(cursor, { ...SCOPE, filters: reordered }).after).toEqual({ id: 123 });
  });

  it('carries a composite sort key', () => {
    const sealed = sealCursor(KEY, { ...STATE, after: { updated_at: 1795338000123, id: 'b3c4' } });
    expect(open(sealed).after).toEqual({ updated_at: 1795338000123, id: 'b3c4' });
  });

  it('says where its walk is read with read replicas, and nothing without them (the cursor is what it was)', () => {
    expect(walkReadOn(KEY, cursor)).toBeUndefined();
    expect(sealCursor(KEY, { ...STATE, readOn: undefined })).toBe(cursor);
    const onReplica = sealCursor(KEY, { ...STATE, readOn: 'replica-2' });
    expect(walkReadOn(KEY, onReplica)).toBe('replica-2');
    expect(open(onReplica)).toEqual({ after: { id: 123 }, firstPageAt: FIRST_PAGE_AT });
    // Not this server's cursor, or altered: it names no place (and the list refuses it).
    expect(walkReadOn(randomBytes(32), onReplica)).toBeUndefined();
    expect(walkReadOn(KEY, alter(onReplica, 3))).toBeUndefined();
    expect(walkReadOn(KEY, 'not a cursor')).toBeUndefined();
  });

  it('is INVALID_CURSOR when any character was altered', () => {
    const dot = cursor.indexOf('.');
    for (const index of [0, dot - 1, dot + 1, cursor.length - 1]) expectInvalid(alter(cursor, index));
  });

  it('is INVALID_CURSOR when the payload was rewritten (another last key) without the server key', () => {
    const [payload = '', tag = ''] = cursor.split('.');
    const rewritten = Buffer.from(Buffer.from(payload, 'base64url').toString('utf8').replace('123', '999'), 'utf8').toString('base64url');
    expectInvalid(`${rewritten}.${tag}`);
    expectInvalid(sealCursor(randomBytes(32), STATE));
  });

  it('is INVALID_CURSOR when malformed', () => {
    for (const malformed of ['x', 'not a cursor', `${cursor}.`, `.${cursor}`, cursor.split('.')[0] ?? '', `${cursor}${'A'.repeat(4096)}`]) {
      expectInvalid(malformed);
    }
  });

  it('is INVALID_CURSOR for another list, another store or other filters', () => {
    expectInvalid(cursor, { ...SCOPE, list: 'categories.list' });
    expectInvalid(cursor, { ...SCOPE, storeId: '0f4e8d2c-1a3b-4c5d-9e6f-7a8b9c0d1e2f' });
    expectInvalid(cursor, { ...SCOPE, filters: { ...STATE.filters, status: 'inactive' } });
    expectInvalid(cursor, { ...SCOPE, filters: { ...STATE.filters, search: 'oud' } });
    expectInvalid(cursor, { ...SCOPE, filters: { ...STATE.filters, limit: '25' } });
    expectInvalid(cursor, { ...SCOPE, filters: { status: 'active', search: null, limit: 25 } });
    expectInvalid(cursor, { ...SCOPE, filters: { ...STATE.filters, updated_since: '2026-11-01T00:00:00Z' } });
  });

  it('works until 15 minutes after the first page, then is CURSOR_EXPIRED', () => {
    expect(CURSOR_TTL_MS).toBe(15 * 60 * 1000);
    expect(open(cursor, SCOPE, FIRST_PAGE_AT + CURSOR_TTL_MS - 1).after).toEqual({ id: 123 });
    expect(failureOf(cursor, SCOPE, FIRST_PAGE_AT + CURSOR_TTL_MS)).toMatchObject({ code: 'CURSOR_EXPIRED', status: 400 });
  });

  it('keeps the first page time across pages: a later page expires with the first', () => {
    const second = sealCursor(KEY, { ...STATE, after: { id: 148 } });
    expect(failureOf(second, SCOPE, FIRST_PAGE_AT + CURSOR_TTL_MS)).toMatchObject({ code: 'CURSOR_EXPIRED' });
  });

  it('is INVALID_CURSOR, not CURSOR_EXPIRED, when an expired cursor was also altered', () => {
    expect(failureOf(alter(cursor, 0), SCOPE, FIRST_PAGE_AT + CURSOR_TTL_MS)).toMatchObject({ code: 'INVALID_CURSOR' });
  });
});
