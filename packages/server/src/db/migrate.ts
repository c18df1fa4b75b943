import type { Knex } from 'knex';
import { migrations } from './migrations';

const source: Knex.MigrationSource<{ name: string; migration: Knex.Migration }> = {
  getMigrations: async () => [...migrations],
  getMigrationName: (entry) => entry.name,
  getMigration: async (entry) => entry.migration,
};

/** Brings the schema up to date; safe to call from several processes (Knex takes a lock). */
export async function migrateToLatest(database: Knex): Promise<string[]> {
  const [, applied] = (await database.migrate.latest({ migrationSource: source })) as [number, string[]];
  return applied;
}

export async function rollbackAll(database: Knex): Promise<void> {
  await database.migrate.rollback({ migrationSource: source }, true);
}
