import { delayBeforeRetry, retryAfterMs, retryPolicy } from '../src/retry';

describe('Retry-After', () => {
  const now = Date.parse('2026-11-22T09:00:00Z');

  it('reads delay-seconds and HTTP dates', () => {
    expect(retryAfterMs('30', now)).toBe(30_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Sun, 22 Nov 2026 09:00:12 GMT', now)).toBe(12_000);
    expect(retryAfterMs('Sun, 22 Nov 2026 08:59:00 GMT', now)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    expect(retryAfterMs(null, now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-5', now)).toBeUndefined();
  });
});

describe('the wait before a retry', () => {
  const policy = retryPolicy({ baseDelayMs: 200, maxDelayMs: 1000, random: () => 0.999 });

  it('is what the service asked for, within the policy, and nothing beyond it', () => {
    expect(delayBeforeRetry(policy, 5, 700)).toBe(700);
    expect(delayBeforeRetry(policy, 0, 1000)).toBe(1000);
    expect(delayBeforeRetry(policy, 0, 1001)).toBeUndefined();
  });

  it('otherwise doubles from the base, with jitter, up to the longest wait', () => {
    const lowest = retryPolicy({ baseDelayMs: 200, maxDelayMs: 1000, random: () => 0 });
    expect([0, 1, 2, 3, 4].map((retry) => delayBeforeRetry(lowest, retry, undefined))).toEqual([100, 200, 400, 500, 500]);
    expect([0, 1, 2, 3, 4].map((retry) => delayBeforeRetry(policy, retry, undefined))).toEqual([200, 400, 800, 1000, 1000]);
  });
});
