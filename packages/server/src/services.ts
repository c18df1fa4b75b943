import type { Knex } from 'knex';
import { type Clock, systemClock } from './clock';
import type { Config } from './config';
import { type Quota, type RateLimiter, databaseCounter, memoryCounter, rateLimiter } from './http/rate-limit';
import type { Deps } from './platform/deps';

/** `quotaProofMs`: quotas are counted per 5-second window. */
export const QUOTA_WINDOW_MS = 5000;

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
