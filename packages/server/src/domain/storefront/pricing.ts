/*
 * The storefront's money rules, in integer halalas (docs/decisions/0037-storefront.md). Rounding is
 * half up, done once, on integers: no floats anywhere.
 */

/** VAT in Saudi Arabia: 15 %. */
export const VAT_PERCENT = 15;

/** The flat shipping charge of an order with something to ship: 30.00 SAR. */
export const SHIPPING_HALALAS = 3000;

/** `numerator / denominator` rounded half up, for non-negative integers. */
export function divideHalfUp(numerator: number, denominator: number): number {
  return Math.floor((2 * numerator + denominator) / (2 * denominator));
}

/** VAT on what is taxed: (subtotal − discount + shipping), half up, once per order. */
export const vatOf = (taxable: number): number => divideHalfUp(taxable * VAT_PERCENT, 100);

/**
 * `amount` shared among `weights` in proportion to them, by largest remainder: each gets the floor
 * of its exact share, and what is left goes one halala at a time to the largest remainders, ties to
 * the earlier weight (the lower line id). The shares add up to `amount` exactly.
 */
export function shareByLargestRemainder(amount: number, weights: readonly number[]): number[] {
  const whole = weights.reduce((sum, weight) => sum + weight, 0);
  if (whole === 0) return weights.map(() => 0);
  const shares = weights.map((weight) => Math.floor((amount * weight) / whole));
  const order = weights
    .map((weight, index) => ({ index, remainder: (amount * weight) % whole }))
    .sort((a, b) => b.remainder - a.remainder || a.index - b.index);
  let left = amount - shares.reduce((sum, share) => sum + share, 0);
  for (const { index } of order) {
    if (left === 0) break;
    shares[index] = (shares[index] ?? 0) + 1;
    left -= 1;
  }
  return shares;
}

/** Asia/Riyadh is UTC+3 all year (no daylight saving). */
const RIYADH_OFFSET_MS = 3 * 3_600_000;

/** The store's calendar day (Asia/Riyadh) of an instant, as `YYYY-MM-DD`: the day its analytics count it on. */
export const riyadhDay = (instant: number): string => new Date(instant + RIYADH_OFFSET_MS).toISOString().slice(0, 10);
