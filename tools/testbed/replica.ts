import pg from 'pg';
import { type Postmaster, postgresPrograms, startPostmaster } from './postmaster';

/** A streaming replica of a PostgreSQL server that a test or a drill starts itself, with Debian's pg_basebackup and pg_ctl. */
export interface RunningReplica {
  /** `primaryUrl` with the replica's host and port: the same user, password and database. */
  readonly url: string;
  /** Runs one statement on the replica, as the test's user (`select pg_wal_replay_pause()`). */
  query<Row>(sql: string): Promise<Row[]>;
  /** Waits until the replica has replayed everything the primary had written when asked. */
  catchUp(): Promise<void>;
  /** Stops the replica's postmaster (fast shutdown): connections to it fail from then on. */
  stop(): Promise<void>;
  /** Starts it again after `stop`, and waits until it answers. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  remove(): Promise<void>;
  /** Its postmaster's process id (the bench measures the CPU of its tree). */
  postmasterPid(): number;
  /** Stops every process of it (SIGSTOP), as a frozen host or a partition looks; `thaw` resumes them (testbed/postmaster.ts). */
  freeze(): void;
  thaw(): void;
}

/**
 * A hot standby of `primaryUrl`'s server: `pg_basebackup -R` into a temporary directory, then a
 * postmaster of its own on a free port, streaming from the primary. PostgreSQL refuses to run as
 * root: as root the programs run as `postgres`, the package's user, who owns the directory.
 */
export async function startReplica(primaryUrl: string): Promise<RunningReplica> {
  const programs = postgresPrograms(await serverMajorOf(primaryUrl));
  const source = new URL(primaryUrl);
  source.pathname = '/';
  const url = new URL(primaryUrl);
  url.hostname = '127.0.0.1';
  let postmaster: Postmaster;
  try {
    postmaster = await startPostmaster({
      prefix: 'svc-replica-',
      programs,
      make: async (data, port) => {
        url.port = String(port);
        await programs.run('pg_basebackup', [
          '--dbname',
          source.toString(),
          '--pgdata',
          data,
          '--write-recovery-conf',
          '--wal-method=stream',
          '--checkpoint=fast',
          '--no-sync',
        ]);
      },
      settings: ['hot_standby = on', 'fsync = off'],
      hba: 'local all all trust\nhost all all 127.0.0.1/32 trust\n',
      ready: () => waitUntilStreaming(url.toString()),
    });
  } catch (error) {
    throw new Error(`The replica did not start: ${String(error)}`);
  }
  const query = <Row>(sql: string): Promise<Row[]> => queryOn<Row>(url.toString(), sql);
  return {
    url: url.toString(),
    query,
    async catchUp() {
      const [primaryAt] = await queryOn<{ position: string }>(primaryUrl, 'select pg_current_wal_insert_lsn()::text as position');
      const position = primaryAt?.position as string;
      const deadline = Date.now() + 30_000;
      for (;;) {
        const [row] = await query<{ caught_up: boolean }>(`select pg_last_wal_replay_lsn() >= '${position}'::pg_lsn as caught_up`);
        if (row?.caught_up) return;
        if (Date.now() > deadline) throw new Error(`The replica did not replay ${position} within 30 s`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    stop: postmaster.stop,
    start: postmaster.start,
    postmasterPid: postmaster.pid,
    freeze: postmaster.freeze,
    thaw: postmaster.thaw,
    remove: postmaster.remove,
  };
}

async function queryOn<Row>(url: string, sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Row[];
  } finally {
    await client.end();
  }
}

async function serverMajorOf(url: string): Promise<number> {
  const [row] = await queryOn<{ server_version_num: string }>(url, 'show server_version_num');
  return Math.floor(Number(row?.server_version_num) / 10000);
}

/** Until the replica answers and receives WAL from the primary. */
async function waitUntilStreaming(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const [row] = await queryOn<{ receiving: boolean }>(url, 'select pg_is_in_recovery() and pg_last_wal_receive_lsn() is not null as receiving');
      if (row?.receiving) return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error('The replica answers but does not stream from the primary');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
