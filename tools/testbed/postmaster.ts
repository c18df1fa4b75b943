import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports';

const run = promisify(execFile);

/** Debian's PostgreSQL programs (`apt-get install postgresql`), unless PG_BINDIR names another directory. */
export const POSTGRES_LIB = '/usr/lib/postgresql';

/** The directory of PostgreSQL's programs of the given major version (pg_basebackup, pg_ctl). */
function binDirOf(major: number): string {
  return process.env.PG_BINDIR || path.join(POSTGRES_LIB, String(major), 'bin');
}

/** A directory holding PostgreSQL's programs (the newest Debian's, or PG_BINDIR), if any. */
export const anyBinDir = (): string | undefined => {
  if (process.env.PG_BINDIR) return fs.existsSync(path.join(process.env.PG_BINDIR, 'pg_basebackup')) ? process.env.PG_BINDIR : undefined;
  if (!fs.existsSync(POSTGRES_LIB)) return undefined;
  return fs
    .readdirSync(POSTGRES_LIB)
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => path.join(POSTGRES_LIB, version, 'bin'))
    .find((dir) => fs.existsSync(path.join(dir, 'pg_basebackup')));
};

/** The major version of the programs in a directory (`/usr/lib/postgresql/15/bin`: 15). */
export const majorOf = (bin: string): number => Number(/\/(\d+)\/bin\/?$/.exec(bin)?.[1] ?? Number.NaN);

/** What a program may print (pg_dump's schema of a database with many partitions runs past execFile's 1 MB). */
const OUTPUT_MAX = 64 * 1024 * 1024;

/** PostgreSQL's programs of one version. PostgreSQL refuses to run as root: as root they run as `postgres`, the package's user. */
export interface PostgresPrograms {
  run(program: string, args: readonly string[]): Promise<{ stdout: string }>;
  /** Gives a file or directory to the user the programs run as. */
  own(file: string): void;
}

export function postgresPrograms(major: number): PostgresPrograms {
  const bin = binDirOf(major);
  const asRoot = process.getuid?.() === 0;
  return {
    run: (program, args) =>
      asRoot
        ? run('runuser', ['-u', 'postgres', '--', path.join(bin, program), ...args], { maxBuffer: OUTPUT_MAX })
        : run(path.join(bin, program), [...args], { maxBuffer: OUTPUT_MAX }),
    own: (file) => {
      if (asRoot) fs.chownSync(file, ...postgresIds());
    },
  };
}

const postgresIds = (): [number, number] => {
  const passwd = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((line) => line.startsWith('postgres:'));
  if (!passwd) throw new Error('No postgres user to run PostgreSQL as');
  const [, , uid, gid] = passwd.split(':');
  return [Number(uid), Number(gid)];
};

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

/** A postmaster of a test's own: its data directory, in a temporary directory, on a free port of the loopback interface. */
export interface Postmaster {
  readonly port: number;
  readonly programs: PostgresPrograms;
  /** Its postmaster's process id. */
  pid(): number;
  /** Starts it (again, after `stop`) and waits until it answers. */
  start(): Promise<void>;
  /** Fast shutdown: connections to it fail from then on. */
  stop(): Promise<void>;
  /**
   * Stops every process of it, the postmaster first (SIGSTOP), as a frozen host or a network
   * partition looks from a client: connections stay open, the kernel still accepts new ones, and
   * nothing answers. `thaw` resumes them (SIGCONT).
   */
  freeze(): void;
  thaw(): void;
  /** Stops it and removes its directory. */
  remove(): Promise<void>;
}

export interface PostmasterPlan {
  /** The temporary directory's prefix (`svc-replica-`). */
  readonly prefix: string;
  readonly programs: PostgresPrograms;
  /** Makes the data directory (initdb, pg_basebackup), given its path and the port it will listen on. */
  readonly make: (data: string, port: number) => Promise<void>;
  /** Lines of postgresql.conf beyond the port, the address and the socket's directory. */
  readonly settings: readonly string[];
  /** pg_hba.conf. */
  readonly hba: string;
  /** Run after each start: until the server is ready for what it is for (a replica streams). */
  readonly ready?: () => Promise<void>;
}

/**
 * A postmaster of its own, in a temporary directory, on a free port: its data directory made by
 * the plan, and its configuration written there (Debian keeps a cluster's in /etc, so a copy or a
 * new directory has none).
 */
export async function startPostmaster(plan: PostmasterPlan): Promise<Postmaster> {
  const { programs } = plan;
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), plan.prefix));
  const data = path.join(dir, 'data');
  programs.own(dir);
  await plan.make(data, port);
  const files: Record<string, string> = {
    'postgresql.conf': [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      ...plan.settings,
      `hba_file = '${path.join(data, 'pg_hba.conf')}'`,
      `ident_file = '${path.join(data, 'pg_ident.conf')}'`,
      '',
    ].join('\n'),
    'pg_hba.conf': plan.hba,
    'pg_ident.conf': '',
  };
  for (const [name, text] of Object.entries(files)) {
    fs.writeFileSync(path.join(data, name), text);
    programs.own(path.join(data, name));
  }
  const log = path.join(dir, 'postgres.log');
  const pidFile = path.join(data, 'postmaster.pid');
  const pid = () => Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  const start = async () => {
    await programs.run('pg_ctl', ['--pgdata', data, '--log', log, '--wait', '--timeout=60', 'start']);
    await plan.ready?.();
  };
  const stop = async () => {
    // A frozen postmaster would take the stop request only once resumed.
    if (fs.existsSync(pidFile)) signalTree(pid(), 'SIGCONT');
    await programs.run('pg_ctl', ['--pgdata', data, '--mode=fast', '--wait', 'stop']).catch(() => undefined);
  };
  try {
    await start();
  } catch (error) {
    const tail = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').slice(-2000) : '';
    await stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`The postmaster did not start: ${String(error)}\n${tail}`);
  }
  return {
    port,
    programs,
    pid,
    start,
    stop,
    freeze: () => signalTree(pid(), 'SIGSTOP'),
    thaw: () => signalTree(pid(), 'SIGCONT'),
    async remove() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
