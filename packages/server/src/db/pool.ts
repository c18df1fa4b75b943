import type { Knex } from 'knex';
import type { PoolUsage } from './engine';

/** The part of knex's pool (tarn, `client.pool`: not knex's documented API; test/db/library-internals.test.ts pins it) read here. */
interface TarnPool {
  numUsed(): number;
  numPendingAcquires(): number;
}

/** The pool's connections in use and the acquires waiting for one, as `/metrics` reports them (none before the pool opens): each engine's `pools.usage`. */
export function poolUsageOf(db: Knex): PoolUsage {
  const pool = (db.client as { pool?: TarnPool }).pool;
  return { inUse: pool?.numUsed() ?? 0, waiting: pool?.numPendingAcquires() ?? 0 };
}
