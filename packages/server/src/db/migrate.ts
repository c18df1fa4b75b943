import type { Knex } from 'knex';
import { withAdvisoryLock } from './locks';
import { migrations } from './migrations';

const source: Knex.MigrationSource<{ name: string; migration: Knex.Migration }> = {
  getMigrations: async () => [...migrations],
  getMigrationName: (entry) => entry.name,
  getMigration: async (entry) => entry.migration,
};

/**
 * Brings the schema up to date. Safe for any number of processes at once, on a fresh database too:
 * on PostgreSQL the whole run holds an advisory lock, since Knex's own lock lives in a table that
 * two first starts would both try to create (docs/decisions/0052-database-at-start-and-migrations.md).
 */
export async function migrateToLatest(database: Knex): Promise<string[]> {
  return withAdvisoryLock(database, 'migrations', async () => {
    const [, applied] = (await database.migrate.latest({ migrationSource: source })) as [number, string[]];
    return applied;
  });
}

/** The migrations this build has that the database has not run, read without writing anything. */
export async function pendingMigrations(database: Knex): Promise<string[]> {
  const names = migrations.map((entry) => entry.name);
  if (!(await database.schema.hasTable('knex_migrations'))) return names;
  const done = new Set((await database('knex_migrations').select<{ name: string }[]>('name')).map((row) => row.name));
  return names.filter((name) => !done.has(name));
}

export async function rollbackAll(database: Knex): Promise<void> {
  await database.migrate.rollback({ migrationSource: source }, true);
}

/** Undoes the latest migration alone (tests of one migration on a database that has rows). */
export async function rollbackLatest(database: Knex): Promise<void> {
  await database.migrate.down({ migrationSource: source });
}
