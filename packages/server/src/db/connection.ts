import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config';

// Instants are stored as epoch milliseconds in bigint columns: read them back as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

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
  return knex({
    client: 'sqlite3',
    connection: { filename: path.join(config.dataDir, sqliteFile) },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate(connection: { run(sql: string, done: (error: Error | null) => void): void }, done: (error: Error | null) => void) {
        connection.run('PRAGMA journal_mode = WAL', () =>
          connection.run('PRAGMA foreign_keys = ON', () => connection.run('PRAGMA busy_timeout = 5000', done)),
        );
      },
    },
  });
}

export function describeDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `SQLite at ${path.join(config.dataDir, 'store.sqlite')}`;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname}`;
}
