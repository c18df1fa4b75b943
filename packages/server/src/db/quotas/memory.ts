import { RateLimiterSQLite } from 'rate-limiter-flexible';
import type { Quotas } from '../engine';
import { type Counted, libraryStoreOptions, type QuotaCounters } from './counters';

/** Past this many keys, those whose window has ended are swept before the next is added. */
const SWEEP_ABOVE = 10_000;

/**
 * The quotas' counters in this process's memory: on SQLite one server process serves every request
 * (db/sqlite/one-server.ts), so its memory holds the counts and a request costs no statement. The
 * window is the same as PostgreSQL's statement counts (postgres.ts): opened by a
 * key's first request, `windowMs` long.
 */
function memoryQuotaCounters(): QuotaCounters {
  const windows = new Map<string, Counted>();
  const sweep = (now: number) => {
    for (const [key, counted] of windows) if (counted.expire <= now) windows.delete(key);
  };
  return {
    folding: undefined,
    async spend(_db, key, _limit, windowMs) {
      const now = Date.now();
      const open = windows.get(key);
      const counted = open && open.expire > now ? { points: open.points + 1, expire: open.expire } : { points: 1, expire: now + windowMs };
      if (!open && windows.size >= SWEEP_ABOVE) sweep(now);
      windows.set(key, counted);
      return counted;
    },
  };
}

/** SQLite's quotas: the counters in the one server process's memory, and rate-limiter-flexible's SQLite store. */
export const sqliteQuotas = (): Quotas => ({
  counters: memoryQuotaCounters(),
  storedLimiter: (db, options) => new RateLimiterSQLite(libraryStoreOptions(db, options)),
});
