import type { Knex } from 'knex';
import { type Clock, systemClock } from '../core/clock';
import type { Config } from '../core/config';
import { QUOTA_WINDOW_MS } from '../core/limits';
import { databaseCounter, memoryCounter, type Quota, type RateLimiter, rateLimiter } from './rate-limit';

/** What every domain function works with: the database and the clock (both injected, never global). */
export interface Deps {
  readonly db: Knex;
  readonly clock: Clock;
}

/** Everything the handlers reach the domain through: one object per running app. */
export interface Services extends Deps {
  readonly limiter: RateLimiter;
  readonly quotas: { readonly installation: Quota; readonly client: Quota };
}

export interface ServiceOptions {
  db: Knex;
  clock?: Clock;
  rateLimits: Config['rateLimits'];
}

/** Rate-limit counters live in PostgreSQL when several instances share it, in memory on SQLite. */
export function createServices({ db, clock = systemClock, rateLimits }: ServiceOptions): Services {
  const counter = db.client.config.client === 'pg' ? databaseCounter(db) : memoryCounter();
  return {
    db,
    clock,
    limiter: rateLimiter(counter, clock),
    quotas: {
      installation: { policy: 'installation', limit: rateLimits.perInstallation, windowMs: QUOTA_WINDOW_MS },
      client: { policy: 'client', limit: rateLimits.perClient, windowMs: QUOTA_WINDOW_MS },
    },
  };
}
