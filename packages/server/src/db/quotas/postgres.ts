import type { Knex } from 'knex';
import { RateLimiterPostgres } from 'rate-limiter-flexible';
import type { Quotas } from '../engine';
import type { PreparedStatements } from '../postgres/prepared-statements';
import { API_QUOTAS_TABLE, type Counted, type FoldedSpendSql, libraryStoreOptions, type QuotaCounters } from './counters';

/**
 * The window, once for both statements: a key's row counts its requests until `expire`; the first
 * request after it opens the next window. Instants are the process's clock (`Date.now()`): the
 * instances of a fleet agree within their clocks' skew, and expired rows are kept a minute for it
 * (services/rate-limit.ts `QUOTA_COUNTERS_KEPT_MS`).
 */
const SPEND_OR_OPEN = `on conflict (key) do update set
      points = case when ${API_QUOTAS_TABLE}.expire <= :quota_now then 1 else ${API_QUOTAS_TABLE}.points + 1 end,
      expire = case when ${API_QUOTAS_TABLE}.expire <= :quota_now then excluded.expire else ${API_QUOTAS_TABLE}.expire end
    returning points, expire`;

const folding: FoldedSpendSql = {
  sql: (source, keyExpression, condition) => `insert into ${API_QUOTAS_TABLE} (key, points, expire)
    select :quota_prefix || ${keyExpression}, 1, :quota_expire from ${source} where ${condition}
    ${SPEND_OR_OPEN}`,
  bindings(prefix, windowMs) {
    const now = Date.now();
    return { quota_prefix: prefix, quota_now: now, quota_expire: now + windowMs };
  },
};

/** One request of one key, alone. */
const SPEND_SQL = `insert into ${API_QUOTAS_TABLE} (key, points, expire) values (:quota_key, 1, :quota_expire) ${SPEND_OR_OPEN}`;

/** Keys over their limit remembered at most; past it the oldest block goes (the key then costs one more statement). */
const BLOCKS_KEPT = 10_000;

/**
 * The quotas' counters as rows of `api_quota_counters`, so that every instance and worker of a
 * fleet spends one quota per key: one upsert per request, a named prepared statement. Once a key
 * is over its limit, this process answers it from memory until its window ends, without asking
 * the database again.
 */
function postgresQuotaCounters(statements: PreparedStatements): QuotaCounters {
  const blockedUntil = new Map<string, number>();
  return {
    folding,
    async spend(db: Knex, key: string, limit: number, windowMs: number): Promise<Counted> {
      const now = Date.now();
      const blocked = blockedUntil.get(key);
      if (blocked !== undefined) {
        if (blocked > now) return { points: limit + 1, expire: blocked };
        blockedUntil.delete(key);
      }
      const [counted] = await statements.rows<Counted>(db, SPEND_SQL, { quota_key: key, quota_now: now, quota_expire: now + windowMs });
      if (!counted) throw new Error(`The quota counter ${key} returned no row`);
      if (counted.points > limit) {
        if (blockedUntil.size >= BLOCKS_KEPT) blockedUntil.delete(blockedUntil.keys().next().value as string);
        blockedUntil.set(key, counted.expire);
      }
      return counted;
    },
  };
}

/** PostgreSQL's quotas: the counters as shared rows, and rate-limiter-flexible's PostgreSQL store. */
export const postgresQuotas = (statements: PreparedStatements): Quotas => ({
  counters: postgresQuotaCounters(statements),
  storedLimiter: (db, options) => new RateLimiterPostgres(libraryStoreOptions(db, options)),
});
