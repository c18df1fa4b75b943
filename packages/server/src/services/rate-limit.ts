import type { Knex } from 'knex';
import { ApiError } from '../core/errors';
import { API_QUOTAS_TABLE, type QuotaCounters } from '../db/quotas/counters';
import type { ExpiryRule } from './housekeeping';

export { API_QUOTAS_TABLE } from '../db/quotas/counters';

/** One window of a quota, as the IETF RateLimit header fields describe it. */
export interface Quota {
  /** The policy name in the headers: `installation` or `client`. */
  policy: string;
  limit: number;
  /** Whole seconds (rate-limiter-flexible counts windows in seconds). */
  windowMs: number;
}

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  resetSeconds: number;
}

export interface RateLimiter {
  take(quota: Quota, key: string): Promise<RateDecision>;
  /**
   * How to spend one request of the quota inside a statement the caller makes anyway (see
   * {@link FoldedSpend}); undefined where a spend costs no statement (SQLite: counted in memory).
   */
  folded(quota: Quota): FoldedSpend | undefined;
}

/**
 * One request of a quota spent inside the caller's own statement, so that a request that reads
 * anyway (the bearer token's context) spends its quota in the same round trip
 * (docs/decisions/0066-postgresql-read-path.md). It counts in the same rows as
 * {@link RateLimiter.take} (db/quotas/postgres.ts).
 */
export interface FoldedSpend {
  /**
   * The spend as a data-modifying statement for a `with` clause: for each row of `source` for which
   * `condition` holds, one request of the key `keyExpression`; it returns the counter (`points`,
   * `expire`). Bound by name with {@link FoldedSpend.bindings}.
   */
  sql(source: string, keyExpression: string, condition: string): string;
  /** The bindings of the statement for one request, now. */
  bindings(): { quota_prefix: string; quota_now: number; quota_expire: number };
  /** The decision from the counter the statement returned, as `take` would have made it. */
  decisionOf(points: number, expire: number): RateDecision;
}

/** The decision of a counter: its requests spent in the window and the epoch ms the window ends. */
function decisionOfCounter(quota: Quota, points: number, expire: number): RateDecision {
  return {
    allowed: points <= quota.limit,
    remaining: Math.max(quota.limit - points, 0),
    resetSeconds: Math.max(1, Math.ceil(Math.max(expire - Date.now(), 0) / 1000)),
  };
}

/** Counters are deleted a minute after their window ends, so instances whose clocks differ a little agree. */
export const QUOTA_COUNTERS_KEPT_MS = 60_000;

/** The housekeeping job's rule for the counters (PostgreSQL; on SQLite the table stays empty). */
export const apiQuotaCountersExpiry: ExpiryRule = {
  table: API_QUOTAS_TABLE,
  key: 'key',
  expired: (rows, now) => rows.where('expire', '<=', now - QUOTA_COUNTERS_KEPT_MS),
};

/** A quota's counters are keyed `<policy>:<key>`: one table serves every policy. */
const keyPrefixOf = (quota: Quota) => `${quota.policy}:`;

/**
 * Quotas per key (docs/decisions/0058-api-quotas-and-one-sqlite-server.md): a key's window opens
 * with its first request and lasts `windowMs`; the limit's requests pass, the next are refused
 * until the window ends. The counts are the database's quota counters (db/quotas/): rows
 * every instance shares on PostgreSQL, the one server process's memory on SQLite.
 */
export function rateLimiter(db: Knex, counters: QuotaCounters): RateLimiter {
  // Per quota object (the services' quotas are made once): no key prefix or fold is built per request.
  const folds = new WeakMap<Quota, FoldedSpend>();
  const checked = new WeakSet<Quota>();
  const check = (quota: Quota) => {
    if (checked.has(quota)) return;
    // The RateLimit fields count whole seconds.
    if (!Number.isInteger(quota.windowMs / 1000) || quota.windowMs <= 0)
      throw new Error(`Quota "${quota.policy}" has a ${quota.windowMs} ms window; windows are whole seconds`);
    checked.add(quota);
  };
  return {
    async take(quota, key) {
      check(quota);
      const { points, expire } = await counters.spend(db, `${keyPrefixOf(quota)}${key}`, quota.limit, quota.windowMs);
      return decisionOfCounter(quota, points, expire);
    },
    folded(quota) {
      const folding = counters.folding;
      if (!folding) return undefined;
      let fold = folds.get(quota);
      if (!fold) {
        check(quota);
        fold = {
          sql: (source, keyExpression, condition) => folding.sql(source, keyExpression, condition),
          bindings: () => folding.bindings(keyPrefixOf(quota), quota.windowMs),
          decisionOf: (points, expire) => decisionOfCounter(quota, points, expire),
        };
        folds.set(quota, fold);
      }
      return fold;
    },
  };
}

/** 429 RATE_LIMITED for a refused decision, with the seconds until the window resets. */
export function rateLimited(quota: Quota, decision: RateDecision): ApiError {
  return new ApiError('RATE_LIMITED', `Rate limit exceeded: ${quota.limit} requests per ${quota.windowMs / 1000} s per ${quota.policy}.`, {
    retry_after_seconds: decision.resetSeconds,
  });
}
