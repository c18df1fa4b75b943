import type { Knex } from 'knex';

/**
 * The advisory locks the service takes on PostgreSQL, each with its own fixed key (any two
 * 32-bit numbers; these spell "svc" and a counter). SQLite needs none: one process writes.
 */
const LOCK_KEYS = { migrations: 1 } as const;
const SVC = 0x737663;

export type AdvisoryLock = keyof typeof LOCK_KEYS;

/**
 * Runs `work` while this process holds the named lock, waiting for any other holder. The lock is a
 * session lock on a connection kept aside for it, so `work` may use the pool's other connections
 * (Knex runs each migration in a transaction of its own).
 */
export async function withAdvisoryLock<T>(db: Knex, lock: AdvisoryLock, work: () => Promise<T>): Promise<T> {
  if (db.client.config.client !== 'pg') return work();
  const connection: unknown = await db.client.acquireConnection();
  const onLockConnection = (sql: string) => db.raw(sql, [SVC, LOCK_KEYS[lock]]).connection(connection);
  try {
    await onLockConnection('select pg_advisory_lock(?, ?)');
    try {
      return await work();
    } finally {
      await onLockConnection('select pg_advisory_unlock(?, ?)');
    }
  } finally {
    await db.client.releaseConnection(connection);
  }
}
