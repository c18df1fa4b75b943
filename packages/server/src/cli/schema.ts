import type { Knex } from 'knex';
import { migrateToLatest, pendingMigrations } from '../db/migrate';
import { PlatformError } from '../platform/stores';
import type { SchemaUse } from './context';

export const NOT_MIGRATED = 'the database schema is not migrated: run svc migrate';

/**
 * Before a command runs: one that writes brings the schema up to date (guide 02's walk-through runs
 * `svc store create` on a new database), one that reads refuses a schema behind this build's rather
 * than change the database, and `svc migrate` does its own.
 */
export async function prepareSchema(use: SchemaUse, db: Knex): Promise<void> {
  if (use === 'writes') await migrateToLatest(db);
  if (use === 'reads' && (await pendingMigrations(db)).length > 0) throw new PlatformError(NOT_MIGRATED);
}
