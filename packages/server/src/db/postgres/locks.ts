import type { Knex } from 'knex';
import pg from 'pg';
import { type AdvisoryLock, type Leadership, LeadershipLost } from '../engine';

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

/** The part of a new connection of the leader's pool that taking the lock uses (node-postgres's own API). */
export interface LeaderConnection {
  query<Row>(sql: string, values: readonly unknown[]): Promise<{ rows: Row[] }>;
  on(event: 'end' | 'error', listener: () => void): unknown;
}

/**
 * Opens the leader's pool: one connection at most, to PostgreSQL itself, kept however long it
 * idles; `claim` runs on each connection the pool opens, before any statement of the pool's, and a
 * claim that fails closes that connection and fails the statement that wanted it.
 */
export type LeaderPool = (claim: (connection: LeaderConnection) => Promise<void>) => Knex;

/**
 * The statement that proves the session still holds the lead: its own row in `pg_locks` for the
 * key (a two-key advisory lock shows as classid, objid and objsubid 2). It reads and takes
 * nothing, so there is nothing to balance, and it fails where the session is gone.
 */
const HOLDS_THE_LEAD_SQL = `select exists (
  select 1 from pg_locks
  where locktype = 'advisory' and pid = pg_backend_pid() and classid = ? and objid = ? and objsubid = 2 and granted
) as held`;

/**
 * How long that statement may take. An idle session answers it in well under a millisecond; one
 * that has not answered in 5 s is cut (a partition, a frozen server): the lead is given up, and the
 * server frees the lock once it notices, never before, so no other process can lead meanwhile.
 */
export const LEAD_CHECK_MS = 5000;

/** The leader's session's `application_name`, so that operators can tell it in `pg_stat_activity` (the lock is in `pg_locks`). */
export const LEADER_NAME = 'svc housekeeping leader';

/** The claim refused: not trying to lead (a round never opens a session of its own), or another process holds the lock. */
class NotLeading extends Error {}

/** What the server said of a failed statement, without the statement knex puts before it (`<sql> - <message>`): one line for the log. */
const whyItFailed = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error);
  const statementEnds = message.lastIndexOf(' - ');
  return (statementEnds === -1 ? message : message.slice(statementEnds + 3)).replace(/\s+/g, ' ');
};

/**
 * The leader among every instance and worker process on one PostgreSQL database
 * (docs/decisions/0086-one-leader.md). It holds a session advisory lock on the one connection of a
 * pool of its own, to PostgreSQL itself (a request never waits for it, no idle reaping drops it, no
 * transaction pooler stands between), and runs its rounds on that connection: every statement of a
 * round runs on the session that holds the lock. The pool opens a connection only while this
 * process tries to lead and no round is under way, taking the lock on it first; so when the
 * session is lost (terminated, restarted, partitioned away), the statements left of a round fail
 * instead of acting on a new connection, beside another leader or after one. The others try for the lock every `retryMs`; the server frees
 * it when the leader's session ends, and only then can another take it.
 */
export function holdLeadership(open: LeaderPool, retryMs: number, onChange: ((held: boolean) => void) | undefined): Leadership {
  let held = false;
  let stopped = false;
  let trying = false;
  /** Rounds under way: no new session is opened until they end, so that none goes on on a session it did not begin on. */
  let rounds = 0;
  /** The connection that holds the lock. */
  let session: (LeaderConnection & { readonly connection?: { stream?: { destroy(): void } } }) | undefined;
  let timer: NodeJS.Timeout | undefined;
  let attempt: Promise<void> = Promise.resolve();

  const setHeld = (now: boolean) => {
    if (held === now) return;
    held = now;
    onChange?.(now);
  };
  const schedule = () => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      attempt = tryLead();
    }, retryMs);
    timer.unref();
  };
  /** The lead is gone with its session (or given up with it): nothing acts until a try takes it again. */
  const lose = (lost: typeof session) => {
    if (lost === undefined || session !== lost) return;
    session = undefined;
    // Cut rather than ended: a session that stopped answering would never say goodbye.
    lost.connection?.stream?.destroy();
    setHeld(false);
    schedule();
  };

  const db = open(async (connection) => {
    if (!trying || stopped || rounds > 0) throw new NotLeading('this process is not trying to lead: a round opens no session of its own');
    const { rows } = await connection.query<{ locked: boolean }>("select pg_try_advisory_lock($1, $2) as locked, set_config('application_name', $3, false)", [
      SVC,
      LOCK_KEYS.leader,
      LEADER_NAME,
    ]);
    if (!rows[0]?.locked) throw new NotLeading('another process leads');
    session = connection;
    // The server ended the session (terminated, restarted) or the network did: the lock went with it.
    connection.on('end', () => lose(connection));
    connection.on('error', () => lose(connection));
  });

  /** Whether the session still holds the lead, asked on it within the deadline; a session that fails or does not answer is given up. */
  const confirm = async (): Promise<boolean> => {
    const asked = session;
    try {
      const { rows } = (await db.raw(HOLDS_THE_LEAD_SQL, [SVC, LOCK_KEYS.leader]).timeout(LEAD_CHECK_MS)) as { rows: { held: boolean }[] };
      if (rows[0]?.held && session !== undefined) return true;
    } catch {
      // gone, or not answering: given up below
    }
    lose(asked ?? session);
    return false;
  };

  async function tryLead(): Promise<void> {
    if (stopped) return;
    // A round of the lost session is still ending: the lead is tried again after it.
    if (rounds > 0) return schedule();
    trying = true;
    try {
      // Opens the connection and takes the lock on it, or fails (another process leads).
      if (await confirm()) setHeld(true);
    } catch {
      // tried again after retryMs
    } finally {
      trying = false;
    }
    if (!held) schedule();
  }
  attempt = tryLead();

  return {
    get held() {
      return held;
    },
    async tried() {
      await attempt;
      return held;
    },
    async round<T>(work: (db: Knex) => Promise<T>): Promise<T | undefined> {
      if (!held || stopped) return undefined;
      rounds += 1;
      try {
        if (!(await confirm())) return undefined;
        const began = session;
        try {
          return await work(db);
        } catch (error) {
          // A round cut short by the loss of its session is the loss, not a failure of the job.
          if (!held || session !== began || !(await confirm())) throw new LeadershipLost(whyItFailed(error));
          throw error;
        }
      } finally {
        rounds -= 1;
      }
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await attempt;
      session = undefined;
      setHeld(false);
      // Closing the session frees its advisory lock.
      await db.destroy().catch(() => undefined);
    },
  };
}
