import pg from 'pg';
import type { AdvisoryLock, Leadership } from '../engine';

/**
 * PostgreSQL's locks between processes: session advisory locks on a connection kept aside (the
 * migrations), and the leader among instances (docs/decisions/0059-every-core.md).
 */

/** The advisory locks the service takes on PostgreSQL, each with its own fixed key (any two 32-bit numbers; these spell "svc" and a counter). */
const LOCK_KEYS = { migrations: 1, leader: 2 } as const;
const SVC = 0x737663;

/**
 * Runs `work` while this process holds the named lock, waiting for any other holder. The lock is a
 * session lock on a connection of its own, opened to PostgreSQL itself (`session`: never through a
 * transaction pooler, which would hand the session's later statements to another server
 * connection), so `work` may use the pool (Knex runs each migration in a transaction of its own).
 */
/** How often a process waiting for a lock between processes asks again. */
const LOCK_POLL_MS = 100;

/**
 * Takes the lock by asking again until it is free, rather than with one `pg_advisory_lock` that
 * waits: a statement waiting holds a snapshot for as long as it waits, and a migration's CREATE
 * INDEX CONCURRENTLY (019) waits for every such snapshot, so instances starting beside the one that
 * migrates would wait on it while it waits on them, for ever.
 */
async function takeInTurn(client: pg.Client, key: number): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1, $2) as locked', [SVC, key]);
    if (rows[0]?.locked) return;
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

export async function withAdvisoryLock<T>(session: pg.ClientConfig, lock: AdvisoryLock, work: () => Promise<T>): Promise<T> {
  const client = new pg.Client(session);
  client.on('error', () => undefined); // a lost session ends the lock; `work`'s own statements report the failure
  await client.connect();
  try {
    await takeInTurn(client, LOCK_KEYS[lock]);
    try {
      return await work();
    } finally {
      await client.query('select pg_advisory_unlock($1, $2)', [SVC, LOCK_KEYS[lock]]);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The leader among every instance and worker process on one PostgreSQL database: it holds a session advisory lock on a connection of its own,
 * outside the pool, to PostgreSQL itself (a request never waits for it, the pool's idle reaping
 * cannot drop it, and no transaction pooler stands between); the
 * others try for it every `retryMs`. When the leader stops, or its connection dies (the server
 * then frees the lock), another instance takes the lead at its next try.
 */
export function holdLeadership(session: pg.ClientConfig, retryMs: number, onChange: ((held: boolean) => void) | undefined): Leadership {
  let held = false;
  let stopped = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let attempt: Promise<void> = Promise.resolve();

  const setHeld = (now: boolean) => {
    if (held === now) return;
    held = now;
    onChange?.(now);
  };
  const drop = (lost: pg.Client) => {
    if (client !== lost) return;
    client = undefined;
    setHeld(false);
    void lost.end().catch(() => undefined);
    schedule();
  };
  const schedule = () => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      attempt = tryLead();
    }, retryMs);
    timer.unref();
  };
  async function tryLead(): Promise<void> {
    try {
      if (!client) {
        const fresh = new pg.Client(session);
        // A broken connection loses the lock with it: the next try reconnects.
        fresh.on('error', () => drop(fresh));
        fresh.on('end', () => drop(fresh));
        client = fresh;
        await fresh.connect();
      }
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1, $2) as locked', [SVC, LOCK_KEYS.leader]);
      if (stopped) return;
      if (rows[0]?.locked) setHeld(true);
    } catch {
      if (client) drop(client);
    }
    // The leader keeps its lock on its open connection and has nothing more to do until it stops.
    if (!held) schedule();
  }
  attempt = tryLead();
  return {
    get held() {
      return held;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await attempt;
      const last = client;
      client = undefined;
      setHeld(false);
      // Closing the session frees its advisory lock.
      await last?.end().catch(() => undefined);
    },
  };
}
