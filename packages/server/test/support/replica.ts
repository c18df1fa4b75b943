import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './ports';
import type { Requirement } from './requirements';

const run = promisify(execFile);

/** Debian's PostgreSQL programs (`apt-get install postgresql`), unless PG_BINDIR names another directory. */
const POSTGRES_LIB = '/usr/lib/postgresql';

/** The directory of PostgreSQL's programs of the given major version (pg_basebackup, pg_ctl). */
function binDirOf(major: number): string {
  return process.env.PG_BINDIR || path.join(POSTGRES_LIB, String(major), 'bin');
}

const anyBinDir = (): string | undefined => {
  if (process.env.PG_BINDIR) return fs.existsSync(path.join(process.env.PG_BINDIR, 'pg_basebackup')) ? process.env.PG_BINDIR : undefined;
  if (!fs.existsSync(POSTGRES_LIB)) return undefined;
  return fs
    .readdirSync(POSTGRES_LIB)
    .map((version) => path.join(POSTGRES_LIB, version, 'bin'))
    .find((dir) => fs.existsSync(path.join(dir, 'pg_basebackup')));
};

/**
 * A streaming replica of the test PostgreSQL that a test starts itself (CI installs Debian's
 * postgresql, whose pg_basebackup and pg_ctl it uses, and sets REQUIRE_REPLICA=1).
 */
export const REPLICA: Requirement = {
  missing: !process.env.TEST_DATABASE_URL
    ? 'TEST_DATABASE_URL is not set'
    : anyBinDir() === undefined
      ? `no pg_basebackup under ${POSTGRES_LIB}/*/bin`
      : undefined,
  howToRun:
    "install PostgreSQL's programs (apt-get install postgresql) or set PG_BINDIR, with TEST_DATABASE_URL set to a server that allows replication connections",
  requiredBy: 'REQUIRE_REPLICA',
};

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
  /**
   * Stops every process of the replica, the postmaster first (SIGSTOP), as a frozen host or a
   * network partition looks from the service: connections stay open, the kernel still accepts new
   * ones, and nothing answers. `thaw` resumes them (SIGCONT).
   */
  freeze(): void;
  thaw(): void;
}

/** A process and its descendants, parents first (from /proc: Linux). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // `pid (comm) state ppid …`: the name may hold spaces and parentheses, so read after the last ')'.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const tree: number[] = [];
  const visit = (pid: number) => {
    tree.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(root);
  return tree;
}

/** Sends `signal` to a process tree, its root first: a stopped postmaster starts no new child meanwhile. */
export function signalTree(root: number, signal: NodeJS.Signals): void {
  for (const pid of processTree(root)) {
    try {
      process.kill(pid, signal);
    } catch {
      // ended meanwhile
    }
  }
}

/**
 * A hot standby of `primaryUrl`'s server: `pg_basebackup -R` into a temporary directory, then a
 * postmaster of its own on a free port, streaming from the primary. PostgreSQL refuses to run as
 * root: as root the programs run as `postgres`, the package's user, who owns the directory.
 */
export async function startReplica(primaryUrl: string): Promise<RunningReplica> {
  const major = await serverMajorOf(primaryUrl);
  const bin = binDirOf(major);
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-replica-'));
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const as = (program: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, program), ...args]) : run(path.join(bin, program), args);
  if (asRoot) fs.chownSync(dir, ...postgresIds());
  const source = new URL(primaryUrl);
  source.pathname = '/';
  await as('pg_basebackup', [
    '--dbname',
    source.toString(),
    '--pgdata',
    data,
    '--write-recovery-conf',
    '--wal-method=stream',
    '--checkpoint=fast',
    '--no-sync',
  ]);
  // Debian keeps a cluster's configuration in /etc, so the copy has none: the replica gets its own.
  const files: Record<string, string> = {
    'postgresql.conf': [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      'hot_standby = on',
      'fsync = off',
      `hba_file = '${path.join(data, 'pg_hba.conf')}'`,
      `ident_file = '${path.join(data, 'pg_ident.conf')}'`,
      '',
    ].join('\n'),
    'pg_hba.conf': 'local all all trust\nhost all all 127.0.0.1/32 trust\n',
    'pg_ident.conf': '',
  };
  for (const [name, text] of Object.entries(files)) {
    fs.writeFileSync(path.join(data, name), text);
    if (asRoot) fs.chownSync(path.join(data, name), ...postgresIds());
  }
  const url = new URL(primaryUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const log = path.join(dir, 'postgres.log');
  const pidFile = path.join(data, 'postmaster.pid');
  const postmasterPid = () => Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  const start = async () => {
    await as('pg_ctl', ['--pgdata', data, '--log', log, '--wait', '--timeout=60', 'start']);
    await waitUntilStreaming(url.toString());
  };
  const stop = async () => {
    // A frozen postmaster would take the stop request only once resumed.
    if (fs.existsSync(pidFile)) signalTree(postmasterPid(), 'SIGCONT');
    await as('pg_ctl', ['--pgdata', data, '--mode=fast', '--wait', 'stop']).catch(() => undefined);
  };
  try {
    await start();
  } catch (error) {
    const tail = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').slice(-2000) : '';
    await stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`The replica did not start: ${String(error)}\n${tail}`);
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
    stop,
    start,
    postmasterPid,
    freeze() {
      signalTree(postmasterPid(), 'SIGSTOP');
    },
    thaw() {
      signalTree(postmasterPid(), 'SIGCONT');
    },
    async remove() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const postgresIds = (): [number, number] => {
  const passwd = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((line) => line.startsWith('postgres:'));
  if (!passwd) throw new Error('No postgres user to run the replica as');
  const [, , uid, gid] = passwd.split(':');
  return [Number(uid), Number(gid)];
};

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
