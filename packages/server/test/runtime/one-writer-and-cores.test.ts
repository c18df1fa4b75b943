/**
 * Issue 21 parts 3 and 6 as an operator meets them with the built server: on SQLite one server
 * process per data directory (a second refuses, `svc` commands still work beside it, a crash leaves
 * no lock behind); on PostgreSQL `WEB_CONCURRENCY=N` serves from N processes behind one port, stops
 * them cleanly on SIGTERM and replaces one that dies. Each case starts real processes and checks
 * what happened, never how long it took.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { promisify } from 'node:util';
import { freshPostgresDatabase } from '../../../../tools/testbed/postgres-database';
import { builtCli, repositoryRoot } from '../../../../tools/testbed/repository';
import { until } from '../../../../tools/testbed/until';
import { builtServersPerTest, type ServerRun, statusOf, tempDataDir } from '../support/built-server';
import { describeOnPostgres } from '../support/databases';

jest.setTimeout(120_000);

const KEY = 'b'.repeat(64);

const start = builtServersPerTest();

describe('SQLite: one server process per data directory', () => {
  it('a second server on the directory refuses with one line and exit 1; svc works beside the first; after a crash a server starts again', async () => {
    const dataDir = tempDataDir();
    const first = start({ DATA_DIR: dataDir, SHUTDOWN_DELAY_MS: '0' });
    const base = `http://127.0.0.1:${await first.port()}`;
    await until(async () => (await statusOf(`${base}/readyz`)) === 200);

    const second = start({ DATA_DIR: dataDir });
    expect(await second.exited).toBe(1);
    expect(second.stderr).toBe(
      `another server is running on the SQLite data directory ${dataDir} (pid ${first.child.pid}): one server process per SQLite data directory (quotas and housekeeping live in it); stop it first, or use PostgreSQL (DATABASE_URL) for several processes\n`,
    );
    expect(second.stdout).toBe('');

    // The admin CLI opens the database itself, beside the running server: it writes, and the server goes on.
    const cli = await promisify(execFile)(process.execPath, [builtCli, 'housekeeping'], {
      cwd: repositoryRoot,
      env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir },
    });
    expect(cli.stderr).toBe('');
    expect(await statusOf(`${base}/readyz`)).toBe(200);

    // A crash (no stop step runs) leaves no lock: the operating system let it go with the process.
    first.child.kill('SIGKILL');
    await first.exited;
    const after = start({ DATA_DIR: dataDir, SHUTDOWN_DELAY_MS: '0' });
    await until(async () => (await statusOf(`http://127.0.0.1:${await after.port()}/readyz`)) === 200);
    after.child.kill('SIGTERM');
    expect(await after.exited).toBe(0);
  });
});

/** One request on a connection of its own, so the cluster's round robin hands it to the next process. */
const getOnNewConnection = (url: string) =>
  new Promise<number>((resolve, reject) => {
    http
      .get(url, { agent: false }, (response) => {
        response.resume();
        response.once('end', () => resolve(response.statusCode ?? 0));
      })
      .once('error', reject);
  });

/** The JSON log lines the run has written so far. */
const logLines = (run: ServerRun): Array<Record<string, unknown>> =>
  run.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describeOnPostgres('PostgreSQL: WEB_CONCURRENCY server processes behind one port', (_postgres, adminUrl) => {
  it('serves from two processes, replaces one that dies, and stops them all on SIGTERM with exit 0', async () => {
    const database = await freshPostgresDatabase(adminUrl);
    try {
      const run = start({ DATABASE_URL: database.url, SECRET_KEY: KEY, WEB_CONCURRENCY: '2', LOG_LEVEL: 'info', SHUTDOWN_DELAY_MS: '0' });
      const base = `http://127.0.0.1:${await run.port()}`;
      // The banner is the primary's, once; a process's own line may come first.
      await until(async () => run.stdout.includes('2 processes)'));
      expect(run.stdout.match(/Store API {2}http/g)).toHaveLength(1);
      const listening = () => logLines(run).filter((line) => /^Server process \d+ listening$/.test(String(line.msg)));
      await until(async () => listening().length === 2);
      const workers = listening().map((line) => line.pid);
      expect(new Set(workers).size).toBe(2);
      expect(workers).not.toContain(run.child.pid);

      const served = () =>
        new Set(
          logLines(run)
            .filter((line) => line.route === '/openapi.json')
            .map((line) => line.pid),
        );
      for (let i = 0; i < 6; i++) expect(await getOnNewConnection(`${base}/openapi.json`)).toBe(200);
      await until(async () => served().size === 2);
      expect([...served()].sort()).toEqual([...workers].sort());

      // One leader among the processes runs housekeeping.
      await until(async () => logLines(run).some((line) => String(line.msg).startsWith('Housekeeping leader: process')));
      expect(logLines(run).filter((line) => String(line.msg).startsWith('Housekeeping leader: process'))).toHaveLength(1);

      // A process that dies is replaced, and the port keeps answering.
      process.kill(workers[0] as number, 'SIGKILL');
      await until(async () => listening().length === 3);
      expect(logLines(run).some((line) => line.msg === `server process ${workers[0]} died (signal SIGKILL): starting another in 1000 ms`)).toBe(true);
      expect(await getOnNewConnection(`${base}/openapi.json`)).toBe(200);

      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      const stopped = logLines(run)
        .filter((line) => line.msg === 'stopping')
        .map((line) => line.pid);
      expect(stopped.sort()).toEqual(
        listening()
          .slice(1)
          .map((line) => line.pid)
          .sort(),
      );
    } finally {
      await database.drop();
    }
  });

  it("METRICS_PORT is the primary's: one scrape adds up every process's requests", async () => {
    const database = await freshPostgresDatabase(adminUrl);
    try {
      const run = start({ DATABASE_URL: database.url, SECRET_KEY: KEY, WEB_CONCURRENCY: '2', METRICS_PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_DELAY_MS: '0' });
      const base = `http://127.0.0.1:${await run.port()}`;
      await until(async () => /Metrics +http:\/\/127\.0\.0\.1:\d+\/metrics/.test(run.stdout));
      const metricsPort = Number(/Metrics +http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(run.stdout)?.[1]);
      const listening = () => logLines(run).filter((line) => /^Server process \d+ listening$/.test(String(line.msg)));
      await until(async () => listening().length === 2);
      // Ten answers on new connections: the primary hands them to the processes in turn (five each),
      // so a scrape of one process's registry alone would count five.
      for (let i = 0; i < 10; i++) expect(await getOnNewConnection(`${base}/livez`)).toBe(200);
      const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(scrape.status).toBe(200);
      const text = await scrape.text();
      const counted = text
        .split('\n')
        .filter((line) => line.startsWith('http_server_request_duration_seconds_count{') && line.includes('operation="health.live"'))
        .map((line) => Number(line.split(' ').at(-1)));
      expect(counted.reduce((sum, value) => sum + value, 0)).toBe(10);
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    } finally {
      await database.drop();
    }
  });

  it('a process that cannot start stops the others and the primary exits 1', async () => {
    const database = await freshPostgresDatabase(adminUrl);
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, resolve));
    const { port } = holder.address() as net.AddressInfo;
    try {
      const run = start({ DATABASE_URL: database.url, SECRET_KEY: KEY, WEB_CONCURRENCY: '2', PORT: String(port), SHUTDOWN_DELAY_MS: '0' });
      expect(await run.exited).toBe(1);
      expect(run.stderr).toContain(`port ${port} is already in use`);
      expect(logLines(run).some((line) => /^server process \d+ could not start \(exit code 1\): stopping$/.test(String(line.msg)))).toBe(true);
    } finally {
      holder.close();
      await database.drop();
    }
  });
});
