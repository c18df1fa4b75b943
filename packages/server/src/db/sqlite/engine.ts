import knex, { type Knex } from 'knex';
import { RateLimiterSQLite } from 'rate-limiter-flexible';
import type { Engine, GatedRead, Judged, KeptResult, Leadership, LeadershipOptions, Statement, StoredLimiterOptions } from '../engine';
import { withEngine } from '../engine';
import { type DatabaseLog, knexLogger } from '../knex-log';
import type { ReadReplicas } from '../read-routing';
import { SharedListener } from '../shared-listener';
import { libraryStoreOptions } from '../stored-limiters';
import { closeSharedFile, openSharedFile, type SharedFile } from './files';
import { SqliteAnnouncements } from './notifications';
import { memoryQuotaCounters } from './quota-counters';
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
export function openSqlite(settings: SqliteSettings): Knex {
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
 * announcements within the process, quotas in its memory.
 */
class SqliteEngine implements Engine {
  readonly name = 'sqlite';
  readonly pooled = false;
  readonly kept = new Map<string, KeptResult>();
  readonly quotaCounters = memoryQuotaCounters();
  readonly claimWebhookDeliveries = claimOnSqlite;
  readonly claimRecordsDelivered = false;
  private readonly file: SharedFile;
  private readonly reader: SqliteReader;
  private readonly announcements: SqliteAnnouncements;
  private readonly listener: SharedListener;
  private closed = false;

  constructor(private readonly settings: SqliteSettings) {
    this.file = openSharedFile(settings.filename);
    this.reader = new SqliteReader(settings.filename, this.file.epoch);
    this.announcements = new SqliteAnnouncements(this.file.announcements);
    this.listener = new SharedListener((tell) => this.announcements.listen(tell));
  }

  async select(_db: Knex, statements: Parameters<Engine['select']>[1]) {
    return statements.map(({ sql, params, fresh = false }) => this.reader.all(sql, params, fresh));
  }

  async selectJudged(_db: Knex, judgement: Statement, read: GatedRead): Promise<Judged> {
    const { sql, params, fresh = false } = judgement;
    const judgementRows = this.reader.all(sql, params, fresh);
    if (!(await read.allows(judgementRows))) return { judgement: judgementRows, read: undefined };
    const { statement } = read;
    return { judgement: judgementRows, read: this.reader.all(statement.sql, statement.params, statement.fresh ?? false) };
  }

  get epoch(): CheckEpoch {
    return this.file.epoch;
  }

  noteRequestArrival(): void {
    this.file.epoch.move();
  }

  lockingRows<Query extends Knex.QueryBuilder>(query: Query): Query {
    return query;
  }

  async lockRows(): Promise<void> {}

  skippingLocked<Query extends Knex.QueryBuilder>(query: Query): Query {
    return query;
  }

  async lockForTransaction(): Promise<void> {}

  /** Plain tables: expiry is the row sweep alone. */
  async keepPartitions(): Promise<[]> {
    return [];
  }

  readonly pauseBetweenBatches = () => new Promise<void>((resolve) => setTimeout(resolve, WRITER_PAUSE_MS));

  withAdvisoryLock<T>(_lock: unknown, work: () => Promise<T>): Promise<T> {
    return work();
  }

  /** The one server process leads, on its one database: a round runs on it as it is. */
  holdLeadership(db: Knex, { onChange }: LeadershipOptions): Leadership {
    onChange?.(true);
    return { held: true, tried: async () => true, round: (work) => work(db), stop: async () => undefined };
  }

  announceWebhookWork(db: Parameters<Engine['announceWebhookWork']>[0]): Promise<void> {
    return this.announcements.announce(db);
  }

  listenForWebhookWork(onWork: () => void, options: Parameters<Engine['listenForWebhookWork']>[1]) {
    return this.listener.listen(onWork, options);
  }

  storedLimiter(db: Knex, options: StoredLimiterOptions) {
    return new RateLimiterSQLite(libraryStoreOptions(db, options));
  }

  openAgain(): Knex {
    return openSqlite(this.settings);
  }

  openReplicas(): ReadReplicas {
    throw new Error('SQLite has no read replicas: DATABASE_REPLICA_URL needs DATABASE_URL (PostgreSQL)');
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.reader.close();
    closeSharedFile(this.settings.filename);
  }
}
