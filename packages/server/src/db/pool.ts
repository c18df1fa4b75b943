import type { Knex } from 'knex';
import { engineOf, type PoolUsage } from './engine';

/** The part of knex's pool (tarn, `client.pool`: not knex's documented API; test/db/library-internals.test.ts pins it) read here. */
interface TarnPool {
  numUsed(): number;
  numPendingAcquires(): number;
}

/** The pool's connections in use and the acquires waiting for one, as `/metrics` reports them (none before the pool opens). */
export function poolUsageOf(db: Knex): PoolUsage {
  const pool = (db.client as { pool?: TarnPool }).pool;
  return { inUse: pool?.numUsed() ?? 0, waiting: pool?.numPendingAcquires() ?? 0 };
}

/** Whether `db` reaches its database through a transaction pooler (`DATABASE_DIRECT_URL` beside a pooled `DATABASE_URL`). */
export const isPooled = (db: Knex): boolean => engineOf(db).pooled;
