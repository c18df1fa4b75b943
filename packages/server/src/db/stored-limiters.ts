import type { Knex } from 'knex';
import type { RateLimiterStoreAbstract } from 'rate-limiter-flexible';
import { engineOf, type StoredLimiterOptions } from './engine';

export type { StoredLimiterOptions } from './engine';

/**
 * rate-limiter-flexible's store for the service's database (RateLimiterPostgres or RateLimiterSQLite,
 * as its engine is), on a table a migration made: the dashboard's sign-in counters. The library's
 * own sweep timer is off (it outlives a closed pool); the caller sweeps.
 */
export const storedLimiter = (db: Knex, options: StoredLimiterOptions): RateLimiterStoreAbstract => engineOf(db).storedLimiter(db, options);

/**
 * The options both engines give the library's store: the pool as a knex client, the table made by
 * a migration, and the library's sweep timer off (it would outlive a closed pool, and on SQLite its
 * failures go unhandled: the caller sweeps instead).
 */
export const libraryStoreOptions = (db: Knex, options: StoredLimiterOptions) =>
  ({ ...options, storeClient: db, storeType: 'knex', tableCreated: true, clearExpiredByTimeout: false }) as const;
