import { toIso } from '../../src/core/clock';

describe('toIso', () => {
  const edges = [
    0,
    1,
    -1,
    999,
    1000,
    86_399_999,
    86_400_000,
    -86_400_000,
    -86_400_001,
    Date.parse('2026-11-22T09:00:00.123Z'),
    Date.parse('2024-02-29T23:59:59.999Z'),
    Date.parse('2000-03-01T00:00:00.000Z'),
    -62_167_219_200_000,
    -62_167_219_200_001,
    253_402_300_799_999,
    253_402_300_800_000,
    8.64e15,
    -8.64e15,
  ];

  it('writes what Date#toISOString writes, at the edges of days, years and the four-digit range', () => {
    for (const instant of edges) expect(toIso(instant)).toBe(new Date(instant).toISOString());
  });

  it('writes what Date#toISOString writes for 5,000 random instants, in and out of order', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 5_000; i++) {
      const instant = Math.floor((random() * 2 - 1) * 4e14);
      expect(toIso(instant)).toBe(new Date(instant).toISOString());
      expect(toIso(instant + 1)).toBe(new Date(instant + 1).toISOString());
    }
  });

  it('fails like Date#toISOString for instants that are not dates', () => {
    expect(() => toIso(Number.NaN)).toThrow(RangeError);
    expect(() => toIso(8.64e15 + 1)).toThrow(RangeError);
  });

  it('keeps fractional milliseconds as Date does (truncated)', () => {
    expect(toIso(1.5)).toBe(new Date(1.5).toISOString());
  });
});
