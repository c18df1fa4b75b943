import type { Knex } from 'knex';
import { type ApiError, isApiError } from '../../src/core/errors';
import { engineOfHandle } from '../../src/db/engine';
import { migrateToLatest } from '../../src/db/migrate';
import { up as storeApiUp } from '../../src/db/migrations/003_store_api';
import type { TestDatabase } from './databases';

/** Opens the suite's database with the store API's tables (003 applied even before index.ts lists it). */
export async function openStoreApiDatabase(testDatabase: TestDatabase): Promise<Knex> {
  const db = await testDatabase.open();
  await migrateToLatest(db);
  if (!(await db.schema.hasTable('idempotency_keys'))) await storeApiUp(db);
  return db;
}

/** A second server instance on the same database: its own connection pool, same configuration. */
export const anotherInstance = (db: Knex): Knex => engineOfHandle(db).pools.openAgain();

function asApiError(error: unknown): ApiError {
  if (!isApiError(error)) throw new Error(`Expected an ApiError, got ${String(error)}`);
  return error;
}

/** The ApiError `run` throws; fails the test when it returns or throws anything else. */
export function apiErrorOf(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    return asApiError(error);
  }
  throw new Error('Expected an ApiError, but nothing was thrown');
}

/** The ApiError `promise` rejects with; fails the test when it resolves or rejects otherwise. */
export async function apiErrorFrom(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    return asApiError(error);
  }
  throw new Error('Expected an ApiError, but the promise resolved');
}
