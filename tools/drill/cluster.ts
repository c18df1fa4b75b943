import fs from 'node:fs';

import { createDatabase } from '../../packages/server/src/db/connection';
import { pgbouncerPath, type RunningPgBouncer, startPgBouncer } from '../testbed/pgbouncer';
import { anyBinDir, majorOf, type Postmaster, postgresPrograms, startPostmaster } from '../testbed/postmaster';
import { type RunningReplica, startReplica } from '../testbed/replica';

/**
 * The drill's own database servers, which it may stop, freeze and restart: a PostgreSQL made for
 * the run (initdb in a temporary directory with Debian's programs, a free port: never the shared
 * cluster on 5432), a streaming replica of it (pg_basebackup) and PgBouncer in transaction mode in
 * front of it, as docs/deploy.md sets them up. Removed at the end of the run.
 */
export interface DrillCluster {
  /** The primary itself: `DATABASE_DIRECT_URL`, and the admin's. */
  readonly primaryUrl: string;
  /** Through PgBouncer: `DATABASE_URL`. */
  readonly pooledUrl: string;
  readonly replica: RunningReplica;
  readonly pgbouncer: RunningPgBouncer;
  readonly postmaster: Postmaster;
  /** A statement on the primary as its superuser (the drill's own checks: pg_locks, pg_terminate_backend). */
  query<Row>(sql: string, values?: readonly (string | number)[], database?: string): Promise<Row[]>;
  /** `pg_dump --schema-only` of a database on the primary. */
  schemaOf(database: string): Promise<string>;
  remove(): Promise<void>;
}

/** knex's warnings of the sessions the drill ends on purpose. */
export const quiet = { warn: () => undefined, debug: () => undefined };

const USER = 'svc';
const DATABASE = 'svc';

/** Why the drill cannot run here, or undefined. */
export function missingPrograms(): string | undefined {
  if (anyBinDir() === undefined) return 'no PostgreSQL programs under /usr/lib/postgresql/*/bin (apt-get install postgresql) and no PG_BINDIR';
  if (!fs.existsSync(pgbouncerPath)) return `no PgBouncer at ${pgbouncerPath} (apt-get install pgbouncer, or set PGBOUNCER_PATH)`;
  return undefined;
}

export async function startCluster(log: (line: string) => void): Promise<DrillCluster> {
  const bin = anyBinDir() as string;
  const programs = postgresPrograms(majorOf(bin));
  const postmaster = await startPostmaster({
    prefix: 'svc-drill-',
    programs,
    make: async (data) => {
      await programs.run('initdb', ['--pgdata', data, '--username', USER, '--auth', 'trust', '--no-sync', '--encoding', 'UTF8', '--locale', 'C']);
    },
    // fsync off: the drill's faults are the service's, not the disk's; the run is thrown away.
    settings: ['wal_level = replica', 'max_wal_senders = 10', 'fsync = off', "shared_preload_libraries = ''"],
    hba: 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n',
  });
  const urlOf = (database: string) => `postgres://${USER}:${USER}@127.0.0.1:${postmaster.port}/${database}`;
  const query = async <Row>(sql: string, values: readonly (string | number)[] = [], database = DATABASE): Promise<Row[]> => {
    const db = createDatabase({ databaseUrl: urlOf(database), dataDir: '' }, { log: quiet });
    try {
      return ((await db.raw(sql, [...values])) as { rows: Row[] }).rows;
    } finally {
      await db.destroy();
    }
  };
  const parts: { replica?: RunningReplica; pgbouncer?: RunningPgBouncer } = {};
  const remove = async () => {
    await parts.pgbouncer?.stop().catch(() => undefined);
    await parts.replica?.remove().catch(() => undefined);
    await postmaster.remove();
  };
  try {
    await query(`create database ${DATABASE}`, [], 'postgres');
    log(`PostgreSQL ${majorOf(bin)} of its own on 127.0.0.1:${postmaster.port} (initdb in a temporary directory)`);
    parts.replica = await startReplica(urlOf(DATABASE));
    log(`a streaming replica of it on ${new URL(parts.replica.url).port} (pg_basebackup)`);
    parts.pgbouncer = await startPgBouncer(urlOf(DATABASE));
    log(`PgBouncer (transaction mode) in front of it on ${new URL(parts.pgbouncer.pooledUrlOf(urlOf(DATABASE))).port}`);
  } catch (error) {
    await remove();
    throw error;
  }
  const { replica, pgbouncer } = parts as Required<typeof parts>;
  return {
    primaryUrl: urlOf(DATABASE),
    pooledUrl: pgbouncer.pooledUrlOf(urlOf(DATABASE)),
    replica,
    pgbouncer,
    postmaster,
    query,
    async schemaOf(database) {
      return (await programs.run('pg_dump', ['--schema-only', '--no-owner', '--dbname', urlOf(database)])).stdout;
    },
    remove,
  };
}
