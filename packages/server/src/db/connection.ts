import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { type Config, type DatabaseConfig, DEFAULT_REPLICA_MAX_LAG_MS, DEFAULT_REPLICA_TIMEOUT_MS } from '../core/config';
import type { Engine, OpenedDatabase } from './engine';
import { type DatabaseLog, stderrLog } from './knex-log';
import { openPostgres } from './postgres/engine';
import { noReplicas, type ReadReplicas } from './read-routing';
import { openSqlite } from './sqlite/engine';
import { claimDataDirectory } from './sqlite/one-server';

export type { DatabaseLog } from './knex-log';

export interface DatabaseOptions {
  /** PostgreSQL: the schema to work in (tests give each suite its own). */
  pgSchema?: string;
  /** SQLite: the file name inside the data directory. */
  sqliteFile?: string;
  /** Where knex's own complaints go (the server gives its JSON logger); by default, standard error. */
  log?: DatabaseLog;
}

/**
 * Opens the database, choosing its engine once (docs/decisions/0075-one-engine-per-database.md):
 * PostgreSQL when DATABASE_URL is set (db/postgres/), otherwise an SQLite file (WAL) under the data
 * directory (db/sqlite/). Nothing else in the service asks which one it is on.
 */
export function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & { database?: Pick<DatabaseConfig, 'poolMax' | 'statementTimeoutMs' | 'directUrl'> },
  { pgSchema, sqliteFile = 'store.sqlite', log = stderrLog }: DatabaseOptions = {},
): OpenedDatabase {
  if (config.databaseUrl) {
    const { poolMax = 10, statementTimeoutMs = 30_000, directUrl } = config.database ?? {};
    return openPostgres({ url: config.databaseUrl, directUrl, poolMax, statementTimeoutMs, schema: pgSchema, log });
  }
  fs.mkdirSync(config.dataDir, { recursive: true });
  return openSqlite({ filename: path.join(config.dataDir, sqliteFile), log });
}

/** The pool alone, as {@link openDatabase} opens it (tests and tools; their services find its engine by it). */
export const createDatabase = (...args: Parameters<typeof openDatabase>): Knex => openDatabase(...args).db;

/**
 * The read replicas of `primary` named by `DATABASE_REPLICA_URL` (db/read-routing.ts), or none:
 * every read then stays on the primary. Closed with the process, after the primary's last use.
 */
export function openReplicas(
  config: { database?: Pick<DatabaseConfig, 'replicaUrls' | 'replicaMaxLagMs' | 'replicaTimeoutMs' | 'replicaPooled'> },
  primary: Knex,
  pools: Engine['pools'],
  log: (line: string) => void,
): ReadReplicas {
  const { replicaUrls: urls = [], replicaMaxLagMs, replicaTimeoutMs, replicaPooled } = config.database ?? {};
  if (urls.length === 0) return noReplicas(primary);
  return pools.openReplicas(primary, urls, {
    maxLagMs: replicaMaxLagMs ?? DEFAULT_REPLICA_MAX_LAG_MS,
    timeoutMs: replicaTimeoutMs ?? DEFAULT_REPLICA_TIMEOUT_MS,
    pooled: replicaPooled ?? false,
    log,
  });
}

/** What a server holds of its database while it runs: let go at its stop's last step. */
export interface ServerClaim {
  release(): void;
}

/**
 * What a server claims before it opens its database: on SQLite the data directory, one server
 * process per directory (db/sqlite/one-server.ts: the quotas and housekeeping live in it); on
 * PostgreSQL nothing (any number of instances share it).
 */
export const claimForServer = (config: Pick<Config, 'databaseUrl' | 'dataDir'>): ServerClaim | undefined =>
  config.databaseUrl ? undefined : claimDataDirectory(config.dataDir);

export function describeDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `SQLite at ${path.join(config.dataDir, 'store.sqlite')}`;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname}`;
}
