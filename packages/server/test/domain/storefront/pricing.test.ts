import { divideHalfUp, riyadhDay, shareByLargestRemainder, vatOf } from '../../../src/domain/storefront/pricing';

describe('storefront money rules', () => {
  it('rounds VAT half up on integer halalas (0.30 SAR taxed is 0.045: 0.05, not the banker’s 0.04)', () => {
    expect(vatOf(30)).toBe(5);
    expect(vatOf(39_000)).toBe(5_850);
    expect(vatOf(10)).toBe(2);
    expect(vatOf(3)).toBe(0);
    expect(vatOf(0)).toBe(0);
    expect(divideHalfUp(5, 2)).toBe(3);
    expect(divideHalfUp(7, 2)).toBe(4);
  });

  it('shares a discount by largest remainder: the shares add up, ties go to the earlier line', () => {
    expect(shareByLargestRemainder(100, [1, 1, 1])).toEqual([34, 33, 33]);
    expect(shareByLargestRemainder(4000, [34_900, 5_100])).toEqual([3490, 510]);
    expect(shareByLargestRemainder(10, [3, 3, 4])).toEqual([3, 3, 4]);
    expect(shareByLargestRemainder(1, [1, 2])).toEqual([0, 1]);
    expect(shareByLargestRemainder(0, [5, 5])).toEqual([0, 0]);
    expect(shareByLargestRemainder(7, [0, 0])).toEqual([0, 0]);
    for (const weights of [
      [1, 2, 3, 4],
      [999, 1],
      [7, 7, 7, 7, 7, 7],
    ]) {
      const shares = shareByLargestRemainder(1234, weights);
      expect(shares.reduce((sum, share) => sum + share, 0)).toBe(1234);
    }
  });

  it('counts an instant on its Asia/Riyadh day: 21:00 UTC is the next day’s midnight', () => {
    expect(riyadhDay(Date.parse('2026-11-20T20:59:59.999Z'))).toBe('2026-11-20');
    expect(riyadhDay(Date.parse('2026-11-20T21:00:00.000Z'))).toBe('2026-11-21');
    expect(riyadhDay(Date.parse('2026-12-31T21:30:00Z'))).toBe('2027-01-01');
  });
});
