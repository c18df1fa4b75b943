import type { Knex } from 'knex';
import { clientInternalsOf } from './internals';

/**
 * How long a write waits for another connection to let SQLite's write lock go before it fails. A
 * request that waited this long is better answered with an error; other writers (the svc CLI, the
 * simulator) commit in batches of milliseconds, so nothing that shares the file waits near it.
 */
export const WRITE_LOCK_WAIT_MS = 5000;

/**
 * Between two tries for the lock. Another process's simulation leaves it free for a couple of
 * milliseconds between its batches: a longer step would miss most of those gaps.
 */
const RETRY_MS = 1;

/** SQLITE_BUSY and its extended codes: the lock was taken, and the statement did nothing. */
function isSqliteBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, RETRY_MS));

/** Tries `attempt` again while SQLite answers busy, until `deadline`: then its last error stands. */
async function retryWhileBusy<T>(error: unknown, attempt: () => Promise<T>, deadline: number): Promise<T> {
  let last = error;
  while (isSqliteBusy(last) && Date.now() < deadline) {
    await tick();
    try {
      return await attempt();
    } catch (again) {
      last = again;
    }
  }
  throw last;
}

/**
 * Makes every writer on an SQLite file wait for the others instead of failing, without ever
 * blocking the event loop while it waits.
 *
 * knex begins a transaction with a plain `BEGIN` (deferred): it takes the write lock at its first
 * write, and when another connection committed after the transaction's first read, SQLite refuses
 * that upgrade at once with SQLITE_BUSY, whatever the busy timeout (waiting could not help: the
 * snapshot is stale). `BEGIN IMMEDIATE` takes the lock before the first read, so the only wait left
 * is for the lock itself. SQLite's own busy timeout would do that wait by sleeping on the calling
 * thread, which is the server's only one (better-sqlite3 is synchronous): every request would stop
 * for as long as another process holds the lock. So the connection's timeout is 0 (set by the
 * caller) and the wait is here: the begin, and any statement run outside a transaction, is tried
 * again every millisecond on a timer, up to WRITE_LOCK_WAIT_MS, while the process answers whatever
 * does not need the writer (the hot reads have a connection of their own).
 *
 * Only top-level transactions are touched: a nested one is a savepoint of its outer transaction,
 * which holds the lock already; and statements inside a transaction cannot meet a busy lock.
 */
export function waitForWriteLock(db: Knex, waitMs = WRITE_LOCK_WAIT_MS): void {
  const client = clientInternalsOf(db);
  const transaction = client.transaction.bind(client);
  client.transaction = (...args: unknown[]) => {
    const trx = transaction(...args);
    // Called after construction (knex begins on a later tick). Failing here rejects the
    // transaction before its work runs, and releases the connection.
    trx.begin = (connection) => {
      const begin = async () => connection.prepare('BEGIN IMMEDIATE').run();
      return begin().catch((error: unknown) => retryWhileBusy(error, begin, Date.now() + waitMs));
    };
    return trx;
  };
  const query = client._query.bind(client);
  client._query = (connection, statement) =>
    query(connection, statement).catch((error: unknown) => retryWhileBusy(error, () => query(connection, statement), Date.now() + waitMs));
}
