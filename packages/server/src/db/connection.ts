import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Config, DatabaseConfig } from '../core/config';
import { attachSqliteReader, cacheStatements } from './reads';
import { waitForWriteLock } from './sqlite-writers';

// Instants are stored as epoch milliseconds in bigint columns: read them back as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

/**
 * Busy timeout 0 on the writer: a wait for the write lock is a timer (`waitForWriteLock`), not
 * SQLite sleeping on the event loop's thread. Opening still waits SQLite's way (better-sqlite3's
 * default of 5 s) until these are set.
 */
const SQLITE_PRAGMAS = ['journal_mode = WAL', 'foreign_keys = ON', 'busy_timeout = 0'];

/** How long opening one PostgreSQL connection may take, and how long a request waits for a pooled one. */
const PG_CONNECT_MS = 5000;
const PG_ACQUIRE_MS = 10_000;

/** The part of a pooled node-postgres client `retiredWhenTheSessionEnds` touches. */
interface PgPooledClient {
  readonly connection: { on(event: 'errorMessage', listener: (message: { severity?: string; code?: string }) => void): void };
  /** Knex's mark of a connection its pool must not hand out again. */
  __knex__disposed?: unknown;
}

/**
 * SQLSTATEs of a session PostgreSQL ends: connection exceptions (08), operator intervention (57P0x:
 * an administrator's termination, a shutdown, a restart), and the idle-in-transaction timeout. The
 * severity says FATAL too, but it is translated with the server's locale; the code is not.
 */
const ENDS_THE_SESSION = /^(08|57P0|25P03)/;

/**
 * Keeps a connection whose session PostgreSQL ended out of the pool from the moment it says so. Its
 * FATAL answer comes before its socket closes, and knex marks a connection only when the socket
 * has ended: in between, the pool would hand the dying connection to the next request, which would
 * fail too (a restart or a failover would fail two requests per connection instead of one). Run
 * after each connection's creation (knex's `afterCreate`), beside node-postgres's own handling of
 * the message.
 */
function retiredWhenTheSessionEnds(client: PgPooledClient, done: (error: Error | null, client: PgPooledClient) => void): void {
  client.connection.on('errorMessage', (message) => {
    if (message.severity === 'FATAL' || message.severity === 'PANIC' || ENDS_THE_SESSION.test(message.code ?? '')) client.__knex__disposed ??= message;
  });
  done(null, client);
}

/** The part of a better-sqlite3 connection this module touches. */
interface SqliteConnection {
  pragma(statement: string): unknown;
  prepare(sql: string): unknown;
}

export interface DatabaseOptions {
  /** PostgreSQL: the schema to work in (tests give each suite its own). */
  pgSchema?: string;
  /** SQLite: the file name inside the data directory. */
  sqliteFile?: string;
  /** Where knex's own complaints go (the server gives its JSON logger); by default, standard error. */
  log?: DatabaseLog;
}

/** The levels knex's complaints are written at. */
export interface DatabaseLog {
  warn(message: string): void;
  debug(message: string): void;
}

/** Without a logger: warnings to standard error, whose readers are people; standard output may carry a command's answer. */
const stderrLog: DatabaseLog = {
  warn: (message) => process.stderr.write(`${message}\n`),
  debug: () => undefined,
};

/**
 * knex writes its complaints with `console.log` unless given a logger, which would put plain text
 * among the JSON lines on standard output. "Acquire connection error" is the same failure that the
 * caller receives and logs itself (the start's wait for the database, a request's 503), with a
 * stack: it is kept at debug so that each failure is one line, not three.
 */
function knexLogger(log: DatabaseLog): Knex.Config['log'] {
  const text = (message: unknown) => (typeof message === 'string' ? message : JSON.stringify(message));
  return {
    warn: (message: unknown) => (text(message).startsWith('Acquire connection error') ? log.debug(text(message)) : log.warn(text(message))),
    error: (message: unknown) => log.warn(text(message)),
    deprecate: (method: string, alternative: string) => log.warn(`knex: ${method} is deprecated; use ${alternative}`),
    debug: (message: unknown) => log.debug(text(message)),
  };
}

/** PostgreSQL when DATABASE_URL is set; otherwise an SQLite file (WAL) under the data directory. */
export function createDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & { database?: Pick<DatabaseConfig, 'poolMax' | 'statementTimeoutMs'> },
  { pgSchema, sqliteFile = 'store.sqlite', log = stderrLog }: DatabaseOptions = {},
): Knex {
  if (config.databaseUrl) {
    const { poolMax = 10, statementTimeoutMs = 30_000 } = config.database ?? {};
    return knex({
      client: 'pg',
      log: knexLogger(log),
      // A statement past its time is cancelled by the server (57014), so one slow query cannot hold a connection forever.
      connection: { connectionString: config.databaseUrl, statement_timeout: statementTimeoutMs, connectionTimeoutMillis: PG_CONNECT_MS },
      pool: { min: 0, max: poolMax, afterCreate: retiredWhenTheSessionEnds },
      // A request waits at most this for a free connection, then answers 503 rather than hanging.
      acquireConnectionTimeout: PG_ACQUIRE_MS,
      ...(pgSchema ? { searchPath: [pgSchema] } : {}),
    });
  }
  fs.mkdirSync(config.dataDir, { recursive: true });
  const filename = path.join(config.dataDir, sqliteFile);
  const db = knex({
    // better-sqlite3 is synchronous: no hand-off to libuv's thread pool per statement (~0.45 ms each with sqlite3).
    client: 'better-sqlite3',
    log: knexLogger(log),
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      // One connection: SQLite has one writer, and knex runs a transaction on the connection it holds.
      min: 1,
      max: 1,
      afterCreate(connection: SqliteConnection, done: (error: Error | null) => void) {
        try {
          for (const pragma of SQLITE_PRAGMAS) connection.pragma(pragma);
          cacheStatements(connection);
          done(null);
        } catch (error) {
          done(error as Error);
        }
      },
    },
  });
  waitForWriteLock(db);
  attachSqliteReader(db, filename);
  return db;
}

export function describeDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `SQLite at ${path.join(config.dataDir, 'store.sqlite')}`;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname}`;
}
