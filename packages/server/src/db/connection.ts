import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../core/config';
import { attachSqliteReader, cacheStatements } from './reads';

// Instants are stored as epoch milliseconds in bigint columns: read them back as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

const SQLITE_PRAGMAS = ['journal_mode = WAL', 'foreign_keys = ON', 'busy_timeout = 5000'];

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
}

/** PostgreSQL when DATABASE_URL is set; otherwise an SQLite file (WAL) under the data directory. */
export function createDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>, { pgSchema, sqliteFile = 'store.sqlite' }: DatabaseOptions = {}): Knex {
  if (config.databaseUrl) {
    return knex({ client: 'pg', connection: config.databaseUrl, pool: { min: 0, max: 10 }, ...(pgSchema ? { searchPath: [pgSchema] } : {}) });
  }
  fs.mkdirSync(config.dataDir, { recursive: true });
  const filename = path.join(config.dataDir, sqliteFile);
  const db = knex({
    // better-sqlite3 is synchronous: no hand-off to libuv's thread pool per statement (~0.45 ms each with sqlite3).
    client: 'better-sqlite3',
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
  attachSqliteReader(db, filename);
  return db;
}

export function describeDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `SQLite at ${path.join(config.dataDir, 'store.sqlite')}`;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname}`;
}
