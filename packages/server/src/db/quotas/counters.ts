import type { Knex } from 'knex';

/**
 * The quotas' room (docs/decisions/0058-api-quotas-and-one-sqlite-server.md): the API quotas'
 * counters and rate-limiter-flexible's stores, for both engines. Per key, the requests spent in its
 * window and when the window ends: a window opens with a key's first request and lasts `windowMs`;
 * the next request after it ends opens the next. The service owns the counting outright: on
 * PostgreSQL a statement of its own over `api_quota_counters`, shared by every instance and worker
 * of a fleet, which a request that reads anyway folds into its own statement (postgres.ts); on
 * SQLite, whose one server process serves every request (db/sqlite/one-server.ts), a map in that
 * process's memory (memory.ts). Each engine gives its own as its `quotas` port (db/engine.ts).
 */

/** The table of `013_api_quota_counters`: one row per key (the key carries its quota's policy). */
export const API_QUOTAS_TABLE = 'api_quota_counters';

/** rate-limiter-flexible's options for a store on the service's database (the sign-in guard's). */
export interface StoredLimiterOptions {
  readonly keyPrefix: string;
  readonly points: number;
  readonly duration: number;
  readonly tableName: string;
}

/** A key's counter after a request: its requests in the window, and the epoch ms the window ends. */
export interface Counted {
  readonly points: number;
  readonly expire: number;
}

/** A spend folded into a caller's own statement (PostgreSQL), bound by name: see {@link QuotaCounters.folding}. */
export interface FoldedSpendSql {
  /**
   * A data-modifying statement for a `with` clause: for each row of `source` for which `condition`
   * holds, one request of the key `:quota_prefix || keyExpression`; it returns the counter
   * (`points`, `expire`). Bound by {@link FoldedSpendSql.bindings}.
   */
  sql(source: string, keyExpression: string, condition: string): string;
  /** The bindings of one request, now, for keys that start with `prefix`. */
  bindings(prefix: string, windowMs: number): { quota_prefix: string; quota_now: number; quota_expire: number };
}

export interface QuotaCounters {
  /** Spends one request of `key` (a window of `windowMs`); a key over `limit` may be answered without asking the database. */
  spend(db: Knex, key: string, limit: number, windowMs: number): Promise<Counted>;
  /**
   * How to spend one request inside a statement the caller makes anyway, so that a request that
   * reads anyway (the bearer token's context) spends its quota in the same round trip
   * (docs/decisions/0066-postgresql-read-path.md). Undefined where a spend costs no statement.
   */
  readonly folding: FoldedSpendSql | undefined;
}

/**
 * The options both engines give the library's store: the pool as a knex client, the table made by
 * a migration, and the library's sweep timer off (it would outlive a closed pool, and on SQLite its
 * failures go unhandled: the caller sweeps instead).
 */
export const libraryStoreOptions = (db: Knex, options: StoredLimiterOptions) =>
  ({ ...options, storeClient: db, storeType: 'knex', tableCreated: true, clearExpiredByTimeout: false }) as const;
