import type { Knex } from 'knex';
import pg from 'pg';

/**
 * What differs between the two databases, starting here (one place for the database's dialect):
 * which one a pool is on, the advisory locks of PostgreSQL, and the leader among instances. SQLite
 * needs no lock between processes: one server process writes it (runtime/one-writer.ts).
 */

export const isPostgres = (db: Knex | Knex.Transaction): boolean => db.client.config.client === 'pg';

/**
 * The query as one that locks the rows it reads until the transaction ends: `for update` on
 * PostgreSQL. On SQLite a writing transaction already holds the database's one write lock (it began
 * with BEGIN IMMEDIATE, db/sqlite-writers.ts), so the query stays as it is.
 */
export const lockingRows = <Query extends Knex.QueryBuilder>(db: Knex | Knex.Transaction, query: Query): Query =>
  isPostgres(db) ? (query.forUpdate() as Query) : query;

/** Locks the rows `query` selects until the transaction ends (see `lockingRows`), reading only their ids. */
export async function lockRows(trx: Knex.Transaction, query: Knex.QueryBuilder): Promise<void> {
  if (isPostgres(trx)) await query.forUpdate().select('id');
}

/**
 * Serialises the transactions that name `key` until each ends: a PostgreSQL transaction-scoped
 * advisory lock. SQLite runs one writing transaction at a time anyway.
 */
export async function lockForTransaction(trx: Knex.Transaction, key: string): Promise<void> {
  if (isPostgres(trx)) await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [key]);
}

/** Between two short writing transactions on SQLite, long enough for a waiting writer (another process polls every millisecond) to take the lock. */
const SQLITE_WRITER_PAUSE_MS = 2;

/**
 * What a long batch job awaits between its transactions so that it never starves other writers:
 * on SQLite a pause that lets the event loop answer and another process take the one write lock;
 * on PostgreSQL nothing (every query already yields, and there is no single lock).
 */
export const pauseBetweenBatches = (db: Knex): (() => Promise<void>) | undefined =>
  isPostgres(db) ? undefined : () => new Promise<void>((resolve) => setTimeout(resolve, SQLITE_WRITER_PAUSE_MS));

/** The advisory locks the service takes on PostgreSQL, each with its own fixed key (any two 32-bit numbers; these spell "svc" and a counter). */
const LOCK_KEYS = { migrations: 1, leader: 2 } as const;
const SVC = 0x737663;

export type AdvisoryLock = keyof typeof LOCK_KEYS;

/**
 * Runs `work` while this process holds the named lock, waiting for any other holder. The lock is a
 * session lock on a connection kept aside for it, so `work` may use the pool's other connections
 * (Knex runs each migration in a transaction of its own).
 */
export async function withAdvisoryLock<T>(db: Knex, lock: AdvisoryLock, work: () => Promise<T>): Promise<T> {
  if (!isPostgres(db)) return work();
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

/** Whether this process is the leader of the instances on its database: the one that runs housekeeping. */
export interface Leadership {
  readonly held: boolean;
  /** Gives the lead up (another instance takes it at its next try) and closes the lock's connection. */
  stop(): Promise<void>;
}

export interface LeadershipOptions {
  /** How often an instance that is not the leader tries again (and one whose connection broke reconnects). */
  readonly retryMs?: number;
  /** Told when this process becomes the leader or stops being it. */
  readonly onChange?: (held: boolean) => void;
}

/** An instance that is not the leader tries again this often: a stopped leader's work waits at most this long. */
export const LEADER_RETRY_MS = 30_000;

/**
 * The leader among every instance and worker process on one database. On SQLite the one server
 * process leads. On PostgreSQL the leader holds a session advisory lock on a connection of its own,
 * outside the pool (a request never waits for it, and the pool's idle reaping cannot drop it); the
 * others try for it every `retryMs`. When the leader stops, or its connection dies (the server
 * then frees the lock), another instance takes the lead at its next try.
 */
export function holdLeadership(db: Knex, { retryMs = LEADER_RETRY_MS, onChange }: LeadershipOptions = {}): Leadership {
  if (!isPostgres(db)) {
    onChange?.(true);
    return { held: true, stop: async () => undefined };
  }
  let held = false;
  let stopped = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let attempt: Promise<void> = Promise.resolve();
  const settings = (db.client as unknown as { connectionSettings: pg.ClientConfig }).connectionSettings;

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
        const fresh = new pg.Client(settings);
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
