import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import type { Clock } from '../../src/core/clock';
import { createDatabase } from '../../src/db/connection';
import { engineOfHandle } from '../../src/db/engine';
import { LEADER_RETRY_MS, type Leadership, type LeadershipOptions } from '../../src/db/locks';
import type { Deps } from '../../src/services/container';
import { describeWith, isMet, POSTGRES } from './requirements';

export interface TestDatabase {
  name: 'sqlite' | 'postgres';
  open(): Promise<Knex>;
  /** After `open`: another connection pool on the same database, as a second instance of the service has. */
  openAnother(): Promise<Knex>;
  close(): Promise<void>;
}

/**
 * The databases a suite runs against: SQLite always; PostgreSQL too where TEST_DATABASE_URL is set.
 * Each suite gets its own SQLite file or PostgreSQL schema, dropped afterwards. Without PostgreSQL,
 * its runs there are noted as skipped (support/requirements), since jest cannot count tests that
 * were never declared. `'sqlite'` keeps a suite to SQLite; a block for PostgreSQL alone is
 * `describeOnPostgres`, which skips cleanly where there is none (a `describe.each` over an empty
 * list fails its whole file instead).
 */
export function testDatabases(only?: 'sqlite'): TestDatabase[] {
  const databases: TestDatabase[] = [sqlite()];
  // A suite for SQLite alone has no runs on PostgreSQL to skip.
  if (only === 'sqlite') return databases;
  if (isMet(POSTGRES, 'its runs on PostgreSQL')) databases.push(postgresSchema(process.env.TEST_DATABASE_URL as string));
  return databases;
}

/**
 * A block for PostgreSQL alone (several instances on one database, its own statements, the built
 * server against it): run on a schema of its own on TEST_DATABASE_URL's server, whose URL the body
 * also gets; without it, skipped and named at the end of the run (support/requirements).
 */
export function describeOnPostgres(title: string, body: (testDatabase: TestDatabase, url: string) => void): void {
  describeWith(POSTGRES, title, () => {
    const url = process.env.TEST_DATABASE_URL as string;
    body(postgresSchema(url), url);
  });
}

function sqlite(): TestDatabase {
  let dir = '';
  const databases: Knex[] = [];
  const connect = () => {
    const database = createDatabase({ databaseUrl: undefined, dataDir: dir });
    databases.push(database);
    return database;
  };
  return {
    name: 'sqlite',
    async open() {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-'));
      return connect();
    },
    async openAnother() {
      return connect();
    },
    async close() {
      await Promise.all(databases.map((database) => database.destroy()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A schema of its own on `url`'s PostgreSQL, dropped at `close` (what `testDatabases` gives for PostgreSQL). */
export function postgresSchema(url: string): TestDatabase {
  const schema = `test_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  let admin: Knex | undefined;
  const databases: Knex[] = [];
  const connect = () => {
    const database = createDatabase({ databaseUrl: url, dataDir: '' }, { pgSchema: schema });
    databases.push(database);
    return database;
  };
  return {
    name: 'postgres',
    async open() {
      admin = knex({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
      await admin.raw('create schema ??', [schema]);
      return connect();
    },
    async openAnother() {
      return connect();
    },
    async close() {
      await Promise.all(databases.map((database) => database.destroy()));
      await admin?.raw('drop schema if exists ?? cascade', [schema]);
      await admin?.destroy();
    },
  };
}

/**
 * An SQLite database in a directory of its own, for a suite that needs services but never reads
 * (the docs site): opened as the service opens one, so that it has its engine. Closed, and its
 * directory removed, after the suite.
 */
export function unreadDatabase(): Knex {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-unread-'));
  const db = createDatabase({ databaseUrl: undefined, dataDir: dir });
  afterAll(async () => {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

/** A test's deps on a database it opened: the engine is the one the database was opened with. */
export const depsOf = (db: Knex, clock: Clock): Deps => ({ db, engine: engineOfHandle(db), clock });

/** The leadership among the processes on `db`'s database, as its engine holds it (retrying every {@link LEADER_RETRY_MS} unless told). */
export const leadershipOn = (db: Knex, { retryMs = LEADER_RETRY_MS, onChange }: LeadershipOptions = {}): Leadership =>
  engineOfHandle(db).locks.holdLeadership(db, { retryMs, ...(onChange ? { onChange } : {}) });
