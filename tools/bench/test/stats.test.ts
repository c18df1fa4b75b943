import { median, percentile } from '../stats';

test('median: the middle value, or the mean of the two middle ones, whatever the order', () => {
  expect(median([3, 1, 2])).toBe(2);
  expect(median([4, 1, 3, 2])).toBe(2.5);
  expect(median([7])).toBe(7);
  expect(median([])).toBeNaN();
});

test('percentile: the nearest rank of an ascending list, the last for the top', () => {
  const sorted = Array.from({ length: 100 }, (_, index) => index + 1);
  expect(percentile(sorted, 0.5)).toBe(51);
  expect(percentile(sorted, 0.99)).toBe(100);
  expect(percentile(sorted, 1)).toBe(100);
  expect(percentile([], 0.5)).toBe(0);
});
