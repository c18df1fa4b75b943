import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { createDatabase } from '../../src/db/connection';
import { recordSkip } from './skips';

export interface TestDatabase {
  name: 'sqlite' | 'postgres';
  open(): Promise<Knex>;
  /** After `open`: another connection pool on the same database, as a second instance of the service has. */
  openAnother(): Promise<Knex>;
  close(): Promise<void>;
}

/**
 * The databases a suite runs against: SQLite always; PostgreSQL too when TEST_DATABASE_URL is set
 * (CI sets it, with REQUIRE_POSTGRES=1 so that a missing URL fails instead). Each suite gets its own
 * SQLite file or PostgreSQL schema, dropped afterwards. Without PostgreSQL, its runs there are noted
 * as skipped (support/skips), since jest cannot count tests that were never declared. `only` picks
 * one of the two.
 */
export function testDatabases(only?: TestDatabase['name']): TestDatabase[] {
  const databases: TestDatabase[] = only === 'postgres' ? [] : [sqlite()];
  // A suite for SQLite alone has no runs on PostgreSQL to skip.
  if (only === 'sqlite') return databases;
  const url = process.env.TEST_DATABASE_URL;
  if (url) databases.push(postgres(url));
  else if (process.env.REQUIRE_POSTGRES === '1') throw new Error('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set');
  else recordSkip({ suite: 'its runs on PostgreSQL', reason: 'TEST_DATABASE_URL is not set', howToRun: 'set TEST_DATABASE_URL to a postgres:// URL' });
  return databases;
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

function postgres(url: string): TestDatabase {
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
