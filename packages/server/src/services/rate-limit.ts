import type { Knex } from 'knex';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../core/errors';
import { isPostgres } from '../db/dialect';
import type { ExpiryRule } from './housekeeping';

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
   * On PostgreSQL, how to spend one request of the quota inside a statement the caller makes anyway
   * (see {@link FoldedSpend}); undefined on SQLite, where the counts are in memory and cost no statement.
   */
  folded(quota: Quota): FoldedSpend | undefined;
}

/**
 * One request of a quota spent inside the caller's own PostgreSQL statement, so that a request that
 * reads anyway (the bearer token's context) spends its quota in the same round trip
 * (docs/decisions/0066-postgresql-read-path.md). It is the library's own upsert (RateLimiterPostgres
 * `_upsert`: the same table, the same `<policy>:<key>` keys, the same window arithmetic and clock),
 * so folded spends and {@link RateLimiter.take} count together.
 */
export interface FoldedSpend {
  /** The bindings of {@link foldedSpendSql}'s statement for one request, now. */
  bindings(): { quota_prefix: string; quota_now: number; quota_expire: number };
  /** The decision from the counter the statement returned, as `take` would have made it. */
  decisionOf(points: number, expire: number): RateDecision;
}

/**
 * The folded spend as a data-modifying statement for a `with` clause: for each row of `source` for
 * which `condition` holds, one request of the key `:quota_prefix || keyExpression`; it returns the
 * counter (`points`, `expire`). Bound by name ({@link FoldedSpend.bindings}): `:quota_prefix`,
 * `:quota_now`, `:quota_expire`; db/prepared-statements.ts `preparedRows` runs such a statement.
 */
export function foldedSpendSql(source: string, keyExpression: string, condition: string): string {
  const counter = API_QUOTAS_TABLE;
  return `insert into ${counter} (key, points, expire)
    select :quota_prefix || ${keyExpression}, 1, :quota_expire from ${source} where ${condition}
    on conflict (key) do update set
      points = case when ${counter}.expire <= :quota_now then 1 else ${counter}.points + 1 end,
      expire = case when ${counter}.expire <= :quota_now then excluded.expire else ${counter}.expire end
    returning points, expire`;
}

/** The library's `consume` outcome from a counter row: its points spent in the window and the epoch ms it ends. */
function decisionOfCounter(quota: Quota, points: number, expire: number): RateDecision {
  return {
    allowed: points <= quota.limit,
    remaining: Math.max(quota.limit - points, 0),
    resetSeconds: Math.max(1, Math.ceil(Math.max(expire - Date.now(), 0) / 1000)),
  };
}

/** The table of `013_api_quota_counters`, rate-limiter-flexible's PostgreSQL store (its keys carry the policy). */
export const API_QUOTAS_TABLE = 'api_quota_counters';
/** Counters are deleted a minute after their window ends, so instances whose clocks differ a little agree. */
export const QUOTA_COUNTERS_KEPT_MS = 60_000;

/** The housekeeping job's rule for the counters (PostgreSQL; on SQLite the table stays empty). */
export const apiQuotaCountersExpiry: ExpiryRule = {
  table: API_QUOTAS_TABLE,
  key: 'key',
  expired: (rows, now) => rows.where('expire', '<=', now - QUOTA_COUNTERS_KEPT_MS),
};

/**
 * A quota counter of rate-limiter-flexible. On PostgreSQL the counts are rows of the database, so
 * every instance and every worker process of a fleet spends one quota per installation or client:
 * one upsert per request (a named prepared statement, the round trip the fixed windows had). Once a
 * key is over its limit, this process refuses it from memory until its window ends, without asking
 * the database again. On SQLite there is one server process (runtime/one-writer.ts), so its memory
 * holds the counts and a request costs no statement.
 */
function counterFor(db: Knex, quota: Quota): RateLimiterAbstract {
  const options = { keyPrefix: quota.policy, points: quota.limit, duration: quota.windowMs / 1000 };
  if (!isPostgres(db)) return new RateLimiterMemory(options);
  return new RateLimiterPostgres({
    ...options,
    storeClient: db,
    storeType: 'knex',
    tableName: API_QUOTAS_TABLE,
    tableCreated: true,
    // The library's sweep timer would outlive a closed pool; housekeeping deletes passed windows instead.
    clearExpiredByTimeout: false,
    inMemoryBlockOnConsumed: quota.limit + 1,
  });
}

const decisionOf = (state: RateLimiterRes, allowed: boolean): RateDecision => ({
  allowed,
  remaining: state.remainingPoints,
  resetSeconds: Math.max(1, Math.ceil(state.msBeforeNext / 1000)),
});

/** The folded spend of a quota: the library's clock (`Date.now()`) and its key prefix. */
function foldedSpendOf(quota: Quota): FoldedSpend {
  return {
    bindings() {
      const now = Date.now();
      return { quota_prefix: `${quota.policy}:`, quota_now: now, quota_expire: now + quota.windowMs };
    },
    decisionOf: (points, expire) => decisionOfCounter(quota, points, expire),
  };
}

/**
 * Quotas per key over rate-limiter-flexible (docs/decisions/0058-api-quotas-and-one-sqlite-server.md):
 * a key's window opens with its first request and lasts `windowMs`; the limit's requests pass, the
 * next are refused until the window ends. The counters are made once per quota and kept.
 */
export function rateLimiter(db: Knex): RateLimiter {
  // Per quota object (the services' quotas are made once), then per its values: no key is built per request.
  const counters = new Map<string, RateLimiterAbstract>();
  const countersOfQuotas = new WeakMap<Quota, RateLimiterAbstract>();
  const folds = new WeakMap<Quota, FoldedSpend>();
  const folding = isPostgres(db);
  const counterOf = (quota: Quota): RateLimiterAbstract => {
    const known = countersOfQuotas.get(quota);
    if (known) return known;
    const name = `${quota.policy}:${quota.limit}:${quota.windowMs}`;
    let counter = counters.get(name);
    if (!counter) {
      if (!Number.isInteger(quota.windowMs / 1000) || quota.windowMs <= 0)
        throw new Error(`Quota "${quota.policy}" has a ${quota.windowMs} ms window; windows are whole seconds`);
      counter = counterFor(db, quota);
      counters.set(name, counter);
    }
    countersOfQuotas.set(quota, counter);
    return counter;
  };
  return {
    async take(quota, key) {
      try {
        return decisionOf(await counterOf(quota).consume(key), true);
      } catch (refusal) {
        // The library rejects with its result when the quota is spent, with an Error when the store failed.
        if (refusal instanceof RateLimiterRes) return decisionOf(refusal, false);
        throw refusal;
      }
    },
    folded(quota) {
      if (!folding) return undefined;
      let fold = folds.get(quota);
      if (!fold) {
        counterOf(quota); // the same checks of the window as `take`
        fold = foldedSpendOf(quota);
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
