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
