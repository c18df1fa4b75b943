/** How the client retries what the service asked it to retry (429, 503, `IDEMPOTENCY_KEY_IN_PROGRESS`) and lost requests that are safe to repeat. */
export interface RetryOptions {
  /** Retries after the first attempt; 0 turns retrying off. Default 3. */
  maxRetries?: number;
  /** The first backoff when the answer names no `Retry-After`; it doubles on each retry, with jitter. Default 500 ms. */
  baseDelayMs?: number;
  /** The longest wait: a `Retry-After` beyond it is not waited for, the failure is thrown instead. Default 60 s. */
  maxDelayMs?: number;
  /** How the client waits (tests pass one that records the wait and returns at once). */
  sleep?: (ms: number) => Promise<void>;
  /** A number in [0, 1) for the jitter; `Math.random` by default. */
  random?: () => number;
}

export type RetryPolicy = Required<RetryOptions>;

export const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  return {
    maxRetries: options.maxRetries ?? 3,
    baseDelayMs: options.baseDelayMs ?? 500,
    maxDelayMs: options.maxDelayMs ?? 60_000,
    sleep: options.sleep ?? defaultSleep,
    random: options.random ?? Math.random,
  };
}

/** `Retry-After` in milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // Every HTTP-date form starts with the day's name; Date.parse alone takes "-5" for a year.
  const date = /^[A-Za-z]/.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The wait before retry number `retry` (0 for the first): what the service asked for, else exponential backoff with
 * "equal jitter" (half fixed, half random), so that clients refused together do not come back together.
 * Undefined when the service asks for longer than the policy waits.
 */
export function delayBeforeRetry(policy: RetryPolicy, retry: number, askedMs: number | undefined): number | undefined {
  if (askedMs !== undefined) return askedMs <= policy.maxDelayMs ? askedMs : undefined;
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(ceiling / 2 + (policy.random() * ceiling) / 2);
}
