import type { Knex } from './fixtures';

/** Where PostgreSQL's WAL is being written now: the bench cases measure the WAL of their work from it. */
export async function walPosition(db: Knex): Promise<string> {
  const { rows } = (await db.raw('select pg_current_wal_insert_lsn()::text as lsn')) as { rows: { lsn: string }[] };
  return rows[0]?.lsn as string;
}

/** The WAL bytes written since `from` (a `walPosition`). */
export async function walBytesSince(db: Knex, from: string): Promise<number> {
  const { rows } = (await db.raw('select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), ?::pg_lsn)::bigint as bytes', [from])) as { rows: { bytes: number }[] };
  return Number(rows[0]?.bytes ?? 0);
}
