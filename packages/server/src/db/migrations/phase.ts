import type { Knex } from 'knex';

/**
 * A phase of a migration as knex runs it (db/migrate.ts: expand, then contract):
 * `config.transaction = false` runs it outside a transaction.
 */
export type PhaseMigration = Knex.Migration & { readonly config?: { readonly transaction?: boolean } };
