import type { Knex } from 'knex';
import type { Clock } from '../core/clock';
import { ApiError } from '../core/errors';
import type { ExpiryRule } from './housekeeping';

/** One fixed window of a quota, as the IETF RateLimit header fields describe it. */
export interface Quota {
  /** The policy name in the headers: `installation` or `client`. */
  policy: string;
  limit: number;
  windowMs: number;
}

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  resetSeconds: number;
}

/** Counts hits per bucket per window; shared by every instance when it lives in the database. */
export interface HitCounter {
  hit(bucket: string, windowStart: number): Promise<number>;
}

/** Buckets kept in memory before windows that have passed are swept (keys can be chosen by callers). */
const MEMORY_BUCKETS = 10_000;

/** For SQLite (one process): counts in memory, forgetting windows that have passed. */
export function memoryCounter(): HitCounter {
  const windows = new Map<string, { start: number; hits: number }>();
  return {
    async hit(bucket, windowStart) {
      if (windows.size >= MEMORY_BUCKETS) for (const [name, window] of windows) if (window.start < windowStart) windows.delete(name);
      const current = windows.get(bucket);
      const next = current && current.start === windowStart ? { start: windowStart, hits: current.hits + 1 } : { start: windowStart, hits: 1 };
      windows.set(bucket, next);
      return next.hits;
    },
  };
}

/**
 * The longest window a quota may have. Rows do not record their window's length, so a window is
 * known to have passed once this long after its start; `take` refuses a longer quota, whose counts
 * would otherwise be deleted while its window runs.
 */
export const MAX_QUOTA_WINDOW_MS = 60_000;

/** Windows that have passed count nothing any more. */
export const rateLimitWindowsExpiry: ExpiryRule = {
  table: 'rate_limit_windows',
  key: ['bucket', 'window_start'],
  expired: (rows, now) => rows.where('window_start', '<=', now - MAX_QUOTA_WINDOW_MS),
};

/** For PostgreSQL (several instances): one upsert per hit; the housekeeping job deletes passed windows. */
export function databaseCounter(db: Knex): HitCounter {
  return {
    async hit(bucket, windowStart) {
      const [row] = await db('rate_limit_windows')
        .insert({ bucket, window_start: windowStart, hits: 1 })
        .onConflict(['bucket', 'window_start'])
        .merge({ hits: db.raw('rate_limit_windows.hits + 1') })
        .returning('hits');
      return Number((row as { hits: number }).hits);
    },
  };
}

export interface RateLimiter {
  take(quota: Quota, key: string): Promise<RateDecision>;
}

export function rateLimiter(counter: HitCounter, clock: Clock): RateLimiter {
  return {
    async take(quota, key) {
      if (quota.windowMs > MAX_QUOTA_WINDOW_MS)
        throw new Error(`Quota "${quota.policy}" has a ${quota.windowMs} ms window; windows are kept ${MAX_QUOTA_WINDOW_MS} ms`);
      const now = clock.now();
      const windowStart = now - (now % quota.windowMs);
      const hits = await counter.hit(`${quota.policy}:${key}`, windowStart);
      const remaining = Math.max(0, quota.limit - hits);
      const resetSeconds = Math.max(1, Math.ceil((windowStart + quota.windowMs - now) / 1000));
      return { allowed: hits <= quota.limit, remaining, resetSeconds };
    },
  };
}

/** 429 RATE_LIMITED for a refused decision, with the seconds until the window resets. */
export function rateLimited(quota: Quota, decision: RateDecision): ApiError {
  return new ApiError('RATE_LIMITED', `Rate limit exceeded: ${quota.limit} requests per ${quota.windowMs / 1000} s per ${quota.policy}.`, {
    retry_after_seconds: decision.resetSeconds,
  });
}
