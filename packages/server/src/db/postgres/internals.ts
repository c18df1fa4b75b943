/**
 * What the PostgreSQL engine takes from knex and node-postgres beyond their documented API, in one
 * place. test/db/library-internals.test.ts pins each, so that an upgrade that moves one fails there,
 * loudly, rather than in production. (The prepared statements' wire protocol, db/postgres/prepared-
 * statements.ts, is pinned by its own test.)
 */

/** The part of a pooled node-postgres client `retiredWhenTheSessionEnds` touches. */
export interface PgPooledClient {
  /** node-postgres's protocol connection, which emits each ErrorResponse as `errorMessage`. */
  readonly connection: { on(event: 'errorMessage', listener: (message: { severity?: string; code?: string }) => void): void };
  /** Knex's mark of a connection its pool must not hand out again (checked by its `validateConnection`). */
  __knex__disposed?: unknown;
}

/** Marks a pooled connection as one knex must not hand out again. */
export function disposeOf(client: PgPooledClient, why: unknown): void {
  client.__knex__disposed ??= why;
}
