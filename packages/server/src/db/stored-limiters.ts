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
