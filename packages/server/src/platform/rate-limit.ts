import type { Knex } from 'knex';
import type { Clock } from '../core/clock';
import { ApiError } from '../core/errors';

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

/** For PostgreSQL (several instances): one upsert per hit; old windows are swept now and then. */
export function databaseCounter(db: Knex): HitCounter {
  let sweeps = 0;
  return {
    async hit(bucket, windowStart) {
      if (++sweeps % 1000 === 0) await db('rate_limit_windows').where('window_start', '<', windowStart - 60_000).delete();
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
