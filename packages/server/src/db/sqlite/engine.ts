import knex, { type Knex } from 'knex';
import type { Engine, GatedRead, Judged, Leadership, LeadershipOptions, Locks, Partitions, Pools, Quotas, Reads, Statement, WebhookWork } from '../engine';
import { type OpenedDatabase, withEngine } from '../engine';
import { type DatabaseLog, knexLogger } from '../knex-log';
import { poolUsageOf } from '../pool';
import { sqliteQuotas } from '../quotas/memory';
import { SharedListener } from '../shared-listener';
import { KeptResults } from '../version-kept';
import { closeSharedFile, openSharedFile, type SharedFile } from './files';
import { SqliteAnnouncements } from './notifications';
import { type CheckEpoch, cacheStatements, SqliteReader } from './reader';
import { claimOnSqlite } from './webhook-claims';
import { waitForWriteLock } from './writers';

/**
 * Busy timeout 0 on the writer: a wait for the write lock is a timer (`waitForWriteLock`), not
 * SQLite sleeping on the event loop's thread. Opening still waits SQLite's way (better-sqlite3's
 * default of 5 s) until these are set.
 */
const SQLITE_PRAGMAS = ['journal_mode = WAL', 'foreign_keys = ON', 'busy_timeout = 0'];

/** Between two short writing transactions, long enough for a waiting writer (another process polls every millisecond) to take the lock. */
const WRITER_PAUSE_MS = 2;

/** The part of a better-sqlite3 connection opening touches. */
interface SqliteConnection {
  pragma(statement: string): unknown;
  prepare(sql: string): unknown;
}

export interface SqliteSettings {
  readonly filename: string;
  readonly log: DatabaseLog;
}

/** An SQLite file (WAL) with its engine: one writer connection through knex, and a reader beside it. */
export function openSqlite(settings: SqliteSettings): OpenedDatabase {
  const engine = new SqliteEngine(settings);
  const db = knex({
    // better-sqlite3 is synchronous: no hand-off to libuv's thread pool per statement (~0.45 ms each with sqlite3).
    client: 'better-sqlite3',
    log: knexLogger(settings.log),
    connection: { filename: settings.filename },
    useNullAsDefault: true,
    pool: {
      // One connection: SQLite has one writer, and knex runs a transaction on the connection it holds.
      min: 1,
      max: 1,
      afterCreate(connection: SqliteConnection, done: (error: Error | null) => void) {
        try {
          for (const pragma of SQLITE_PRAGMAS) connection.pragma(pragma);
          cacheStatements(connection, engine.epoch);
          done(null);
        } catch (error) {
          done(error as Error);
        }
      },
    },
  });
  waitForWriteLock(db);
  return withEngine(db, engine);
}

/**
 * SQLite: one writer (a transaction holds the write lock from its BEGIN IMMEDIATE, so rows need no
 * locks of their own and no lock is needed between processes: one server process writes the file,
 * one-server.ts), hot reads from a read-only connection that keeps results until a commit,
 * announcements within the process, quotas in its memory. Its state (the shared file, the reader,
 * kept results, the listeners, the counters) is its own.
 */
class SqliteEngine implements Engine {
  readonly name = 'sqlite';
  readonly reads: Reads;
  readonly locks: Locks;
  readonly webhookWork: WebhookWork;
  readonly quotas: Quotas = sqliteQuotas();
  /** Plain tables: expiry is the row sweep alone. */
  readonly partitions: Partitions = { keep: async () => [] };
  readonly pools: Pools;
  private readonly file: SharedFile;
  private closed = false;

  constructor(private readonly settings: SqliteSettings) {
    this.file = openSharedFile(settings.filename);
    const reader = new SqliteReader(settings.filename, this.file.epoch);
    this.reads = sqliteReads(reader, this.file.epoch);
    this.locks = SQLITE_LOCKS;
    this.webhookWork = sqliteWebhookWork(new SqliteAnnouncements(this.file.announcements));
    this.pools = {
      pooled: false,
      usage: poolUsageOf,
      openAgain: () => openSqlite(this.settings).db,
      openReplicas: () => {
        throw new Error('SQLite has no read replicas: DATABASE_REPLICA_URL needs DATABASE_URL (PostgreSQL)');
      },
      close: () => {
        if (this.closed) return;
        this.closed = true;
        reader.close();
        closeSharedFile(this.settings.filename);
      },
    };
  }

  get epoch(): CheckEpoch {
    return this.file.epoch;
  }
}

/** Hot reads from the reader connection, which keeps results until the next commit. */
function sqliteReads(reader: SqliteReader, epoch: CheckEpoch): Reads {
  const kept = new KeptResults();
  const rowsOf = ({ sql, params, fresh = false }: Statement) => reader.all(sql, params, fresh);
  return {
    select: async (_db, statements) => statements.map(rowsOf),
    async selectJudged(_db: Knex, judgement: Statement, read: GatedRead): Promise<Judged> {
      const judgementRows = rowsOf(judgement);
      if (!(await read.allows(judgementRows))) return { judgement: judgementRows, read: undefined };
      return { judgement: judgementRows, read: rowsOf(read.statement) };
    },
    keptUntilCommit: true,
    noteRequestArrival: () => epoch.move(),
    keptForVersion: (key, version, compute) => kept.keptForVersion(key, version, compute),
  };
}

/**
 * One writer: a writing transaction already holds the database's one write lock, and one server
 * process writes the file, so no lock is taken; a batch job pauses between its transactions.
 */
const SQLITE_LOCKS: Locks = {
  lockingRows: (query) => query,
  lockRows: async () => undefined,
  skippingLocked: (query) => query,
  lockForTransaction: async () => undefined,
  pauseBetweenBatches: () => new Promise<void>((resolve) => setTimeout(resolve, WRITER_PAUSE_MS)),
  withAdvisoryLock: (_lock, work) => work(),
  /** The one server process leads, on its one database: a round runs on it as it is. */
  holdLeadership(db: Knex, { onChange }: LeadershipOptions): Leadership {
    onChange?.(true);
    return { held: true, tried: async () => true, round: (work) => work(db), stop: async () => undefined };
  },
};

/** Announcements within the process, told after the commit. */
function sqliteWebhookWork(announcements: SqliteAnnouncements): WebhookWork {
  const listener = new SharedListener((tell) => announcements.listen(tell));
  return {
    announce: (db) => announcements.announce(db),
    listen: (onWork, options) => listener.listen(onWork, options),
    claim: claimOnSqlite,
    claimRecordsDelivered: false,
  };
}
