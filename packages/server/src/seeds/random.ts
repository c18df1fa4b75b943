/*
 * Seeded randomness for the demo data (catalog and simulated activity): the same seed gives the
 * same data on every machine, and nothing here ever reads Math.random.
 */

/** A source of numbers in [0, 1). */
export type Random = () => number;

/** mulberry32: a tiny, fast, seedable PRNG (32 bits of state, good enough for demo data). */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

/** A whole number from `low` to `high`, both included. */
export const between = (random: Random, low: number, high: number): number => low + Math.floor(random() * (high - low + 1));

/** Picks indices in proportion to fixed weights: the cumulative sums are built once, each pick is a binary search. */
export function weightedPicker(weights: readonly number[]): (random: Random) => number {
  const cumulative: number[] = [];
  let total = 0;
  for (const weight of weights) {
    total += weight;
    cumulative.push(total);
  }
  return (random) => {
    const target = random() * total;
    let low = 0;
    let high = cumulative.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((cumulative[middle] ?? 0) > target) high = middle;
      else low = middle + 1;
    }
    return low;
  };
}
