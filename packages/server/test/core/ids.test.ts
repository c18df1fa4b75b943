import { randomUUID } from 'node:crypto';
import { orderedUuidV7s, UUID_PATTERN, uuidV7, uuidV7Time } from '../../src/core/ids';

describe('uuidV7', () => {
  const at = Date.parse('2026-11-22T09:00:00.123Z');

  it('is a UUID of version 7 and the RFC 9562 variant, its first 48 bits the time in milliseconds', () => {
    const id = uuidV7(at);
    expect(id).toMatch(UUID_PATTERN);
    expect(id[14]).toBe('7');
    expect('89ab').toContain(id[19]);
    expect(id.replace(/-/g, '').slice(0, 12)).toBe(at.toString(16).padStart(12, '0'));
    expect(uuidV7Time(id)).toBe(at);
  });

  it('matches the layout of RFC 9562, appendix A.6 (its example time and random bits)', () => {
    const random = Buffer.from('0cc3' + '18c4dc0c0c07398f', 'hex');
    expect(uuidV7(0x017f22e279b0, random)).toBe('017f22e2-79b0-7cc3-98c4-dc0c0c07398f');
  });

  it('sorts by time as text, whatever the random bits', () => {
    const ids = [at + 1, at, at + 86_400_000, 0, at - 1].map((time) => uuidV7(time));
    const byText = [...ids].sort();
    expect(byText.map(uuidV7Time)).toEqual([0, at - 1, at, at + 1, at + 86_400_000]);
  });

  it('is unique within one millisecond', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => uuidV7(at)));
    expect(ids.size).toBe(1000);
  });

  it.each([-1, 1.5, 2 ** 48, Number.NaN])('refuses a time the 48 bits cannot hold (%p)', (time) => {
    expect(() => uuidV7(time)).toThrow(RangeError);
  });

  it('tells no time for other ids: v4, malformed, another version', () => {
    expect(uuidV7Time(randomUUID())).toBeUndefined();
    expect(uuidV7Time('not-a-uuid')).toBeUndefined();
    expect(uuidV7Time(uuidV7(at).replace(/^(.{14})7/, '$16'))).toBeUndefined();
    expect(uuidV7Time(`urn:uuid:${uuidV7(at)}`)).toBeUndefined();
    expect(uuidV7Time(uuidV7(at).toUpperCase())).toBe(at);
  });
});

describe('orderedUuidV7s', () => {
  const at = Date.parse('2026-11-22T09:00:00.123Z');

  it('makes the ids of one millisecond in order, as text, each a valid UUIDv7 of that millisecond', () => {
    const next = orderedUuidV7s();
    const ids = Array.from({ length: 500 }, () => next(at));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(500);
    for (const id of ids) {
      expect(id).toMatch(UUID_PATTERN);
      expect(uuidV7Time(id)).toBe(at);
    }
  });

  it('counts on from the random bits it drew, carrying from rand_b into rand_a, and draws again in another millisecond', () => {
    // rand_a 0xffe and rand_b all ones: the next id of the same millisecond carries into rand_a.
    const next = orderedUuidV7s(() => Buffer.from('03ffbfffffffffffffff', 'hex'));
    const first = next(at);
    const second = next(at);
    expect(first.slice(14, 18)).toBe('7ffe');
    expect(first.slice(19)).toBe('bfff-ffffffffffff');
    expect(second.slice(14, 18)).toBe('7fff');
    expect(second.slice(19)).toBe('8000-000000000000');
    expect([second, first].sort()).toEqual([first, second]);
    const later = next(at + 1);
    expect(uuidV7Time(later)).toBe(at + 1);
    expect(later.slice(14, 18)).toBe('7ffe');
  });
});
