import type { Knex } from 'knex';

/** A query runner: the database itself or a transaction. */
export type Db = Knex | Knex.Transaction;

/**
 * Runs `work` in a transaction: the one `db` already is (a request under an Idempotency-Key runs in
 * the key's transaction), else a new one. On SQLite, whose pool has one connection, work must use
 * only the `trx` it is given.
 */
export const inTransaction = <T>(db: Db, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db as Knex.Transaction) : db.transaction(work);

/**
 * What names the unique index a write broke, or undefined when the error is anything else:
 * PostgreSQL's constraint name (error 23505), SQLite's `UNIQUE constraint failed: table.column, …`
 * message (better-sqlite3 codes SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY).
 */
export function brokenUniqueIndex(error: unknown): string | undefined {
  const { code, constraint, message } = (error ?? {}) as { code?: unknown; constraint?: unknown; message?: unknown };
  if (code === '23505') return typeof constraint === 'string' ? constraint : '';
  const sqliteUnique =
    typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT') && typeof message === 'string' && message.includes('UNIQUE constraint failed');
  return sqliteUnique ? (message as string).slice(message.indexOf('UNIQUE constraint failed')) : undefined;
}

/** The id of the row an insert returned: PostgreSQL gives `{id}` objects, SQLite the bare id. */
export function insertedId(returned: readonly unknown[]): number {
  const [first] = returned;
  const id = typeof first === 'object' && first !== null ? (first as { id: unknown }).id : first;
  if (id === undefined || id === null) throw new Error('The insert returned no id');
  return Number(id);
}
