import type { Knex } from 'knex';
import type { Clock } from '../clock';

/** What every domain function works with: the database and the clock (both injected, never global). */
export interface Deps {
  readonly db: Knex;
  readonly clock: Clock;
}

/** A query runner: the database itself or a transaction. */
export type Db = Knex | Knex.Transaction;

/** Lists (scopes, URLs) are stored as JSON text, the same on SQLite and PostgreSQL. */
export const toJsonList = (values: readonly string[]): string => JSON.stringify([...values]);

export function fromJsonList(text: string): string[] {
  const value: unknown = JSON.parse(text);
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw new Error('Stored list is not a list of strings');
  return value;
}

/**
 * Runs `work` in a transaction: the one `db` already is (a request under an Idempotency-Key runs in
 * the key's transaction), else a new one. On SQLite, whose pool has one connection, work must use
 * only the `trx` it is given.
 */
export const inTransaction = <T>(db: Db, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db as Knex.Transaction) : db.transaction(work);

/** A UUID, as ids of stores, apps, installations and clients are. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What names the unique index a write broke, or undefined when the error is anything else:
 * PostgreSQL's constraint name (error 23505), SQLite's `UNIQUE constraint failed: table.column, …`
 * message (better-sqlite3 codes SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY).
 */
export function brokenUniqueIndex(error: unknown): string | undefined {
  const { code, constraint, message } = (error ?? {}) as { code?: unknown; constraint?: unknown; message?: unknown };
  if (code === '23505') return typeof constraint === 'string' ? constraint : '';
  const sqliteUnique = typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT') && typeof message === 'string' && message.includes('UNIQUE constraint failed');
  return sqliteUnique ? (message as string).slice(message.indexOf('UNIQUE constraint failed')) : undefined;
}
