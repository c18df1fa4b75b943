import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './ports';

/** Debian's PgBouncer (`apt-get install pgbouncer`, 1.18), unless PGBOUNCER_PATH names another. */
export const pgbouncerPath = process.env.PGBOUNCER_PATH || '/usr/sbin/pgbouncer';

export interface RunningPgBouncer {
  /** `directUrl` with PgBouncer's host and port instead: the same user, password and database. */
  pooledUrlOf(directUrl: string): string;
  stop(): Promise<void>;
  /**
   * Stops it (SIGTERM: PgBouncer ends every client connection at once) and starts it again on the
   * same port `downMs` later, as an operator's restart does; resolves once it answers again.
   */
  restart(downMs?: number): Promise<void>;
}

/**
 * A PgBouncer of the test's own in transaction mode (the mode a fleet runs it in), in front of the
 * server of `directUrl`, on a free port, with the service's statement timeout set by the pooler
 * (`connect_query`), as docs/deploy.md shows. PgBouncer refuses to run as root: as root it is
 * started as `postgres`, the package's user.
 */
export async function startPgBouncer(directUrl: string): Promise<RunningPgBouncer> {
  const target = new URL(directUrl);
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pgbouncer-'));
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${user}" "${password}"\n`);
  fs.writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432} connect_query='set statement_timeout = 30000'`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 200',
      'default_pool_size = 8',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) fs.chownSync(path.join(dir, file), uid, gid);
  }
  const launch = () => {
    const child: ChildProcess = spawn(pgbouncerPath, [...(asRoot ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
    return { child, exited: new Promise<void>((resolve) => child.once('exit', () => resolve())) };
  };
  let running = launch();
  const pooledUrlOf = (url: string) => {
    const pooled = new URL(url);
    pooled.hostname = '127.0.0.1';
    pooled.port = String(port);
    return pooled.toString();
  };
  const halt = async () => {
    running.child.kill('SIGTERM');
    await running.exited;
  };
  const stop = async () => {
    await halt();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  /** Until it answers a statement: fails (stopping it) after 10 s or when it exits. */
  const answering = async () => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new pg.Client({ connectionString: pooledUrlOf(directUrl) });
      try {
        await probe.connect();
        await probe.query('select 1');
        await probe.end();
        return;
      } catch (error) {
        await probe.end().catch(() => undefined);
        if (Date.now() > deadline || running.child.exitCode !== null) {
          const log = fs.existsSync(path.join(dir, 'pgbouncer.log')) ? fs.readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8').slice(-2000) : '';
          await stop();
          throw new Error(`PgBouncer did not answer: ${String(error)}\n${log}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };
  await answering();
  return {
    pooledUrlOf,
    stop,
    async restart(downMs = 0) {
      await halt();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      running = launch();
      await answering();
    },
  };
}
