import type { Knex } from 'knex';

/**
 * What the SQLite engine takes from knex beyond its documented API, in one place.
 * test/db/library-internals.test.ts pins each, so that an upgrade that moves one fails there.
 */

/** The knex internals db/sqlite/writers.ts wraps: the transaction a client makes, and its one-query runner. */
export interface TransactionInternals {
  begin(connection: SqliteWriter): Promise<unknown>;
}
export interface ClientInternals {
  transaction(...args: unknown[]): TransactionInternals;
  _query(connection: SqliteWriter, query: unknown): Promise<unknown>;
}

/** The part of a better-sqlite3 connection the writers touch. */
export interface SqliteWriter {
  prepare(sql: string): { run(): unknown };
}

export const clientInternalsOf = (db: Knex): ClientInternals => db.client as unknown as ClientInternals;

/** The outermost transaction of `trx`: a nested one is a savepoint of it. */
export function outermostOf(trx: Knex.Transaction): Knex.Transaction {
  let outermost = trx;
  while (outermost.parentTransaction) outermost = outermost.parentTransaction;
  return outermost;
}

/** Settles when the (outermost) transaction has committed, or rolled back (knex `executionPromise`). */
export const settledOf = (trx: Knex.Transaction): Promise<unknown> => trx.executionPromise;
