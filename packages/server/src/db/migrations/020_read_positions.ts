import type { Knex } from 'knex';
import { forEngine } from '../engine';

/**
 * Read-your-writes on read replicas (docs/decisions/0078-read-replicas.md): per store and
 * installation, the primary's WAL insert position right after the installation's last write
 * committed. Every instance records and reads it on the primary; a replica serves the
 * installation's lists only once it has replayed that far. On PostgreSQL the table is unlogged: it
 * writes no WAL, is not replicated (only the primary reads it) and is emptied by a crash, after
 * which reads rely on the lag bound alone until the next writes. SQLite has no replicas: the table
 * stays empty there.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('replica_read_positions', (t) => {
    t.uuid('store_id').notNullable();
    t.uuid('installation_id').notNullable();
    t.specificType('wal_lsn', 'pg_lsn').notNullable();
    t.primary(['store_id', 'installation_id']);
  });
  const unlogged = forEngine(knex, { postgres: 'alter table replica_read_positions set unlogged', sqlite: undefined });
  if (unlogged) await knex.raw(unlogged);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('replica_read_positions');
}
