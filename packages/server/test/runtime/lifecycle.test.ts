/**
 * The built server as an operator runs it (`node packages/server/dist/main.js`): settings that fail
 * closed, probes, the stop sequence, a database that is late or goes away, replicas that migrate
 * together. Each case starts real processes; none checks a duration, only what happened in order.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import { freshPostgresDatabase } from '../../../../tools/testbed/postgres-database';
import { builtCli, builtServer } from '../../../../tools/testbed/repository';
import { until } from '../../../../tools/testbed/until';
import { createDatabase } from '../../src/db/connection';
import { SAME_STOP_MS } from '../../src/runtime/shutdown';
import { builtServersPerTest, expectRefusedStart, statusOf, tempDataDir } from '../support/built-server';
import { describeOnPostgres } from '../support/databases';

jest.setTimeout(120_000);

const KEY = 'a'.repeat(64);
/** What production needs besides the key: the issuer clients reach it at. */
const PUBLIC_URL = 'https://api.example.com';

const start = builtServersPerTest();

describe(`settings that fail closed (${builtServer})`, () => {
  it.each([
    [{ NODE_ENV: 'prod' }, 'NODE_ENV must be one of development, test, production, not "prod"'],
    [{ NODE_ENV: 'Production' }, 'NODE_ENV must be one of development, test, production, not "Production"'],
    [{ PORT: ' ' }, 'PORT must be a decimal integer from 0 to 65535, not " "'],
    [{ PORT: '0x1152' }, 'PORT must be a decimal integer from 0 to 65535, not "0x1152"'],
    [{ PORT: '1e3' }, 'PORT must be a decimal integer from 0 to 65535, not "1e3"'],
    [{ PORT: '80.5' }, 'PORT must be a decimal integer from 0 to 65535, not "80.5"'],
    [{ PORT: '65536' }, 'PORT must be a decimal integer from 0 to 65535, not "65536"'],
    [{ NODE_ENV: 'production' }, 'SECRET_KEY is required in production: 32 random bytes as 64 hex digits or base64 (openssl rand -hex 32)'],
    [
      { NODE_ENV: 'production', SECRET_KEY: KEY },
      'PUBLIC_URL is required in production: the https origin clients reach the service at (https://api.example.com)',
    ],
    [{ NODE_ENV: 'production', SECRET_KEY: KEY, PUBLIC_URL, SEED_DEMO: 'true' }, "SEED_DEMO is refused in production: the demo owner's password is public"],
    [{ DATABASE_POOL_MAX: '0' }, 'DATABASE_POOL_MAX must be a decimal integer from 1 to 1000, not "0"'],
    [{ DATABASE_STATEMENT_TIMEOUT_MS: '-5' }, 'DATABASE_STATEMENT_TIMEOUT_MS must be a decimal integer from 0 to 3600000, not "-5"'],
    [{ SHUTDOWN_TIMEOUT_MS: '20s' }, 'SHUTDOWN_TIMEOUT_MS must be a decimal integer from 0 to 600000, not "20s"'],
    [{ SEED_DEMO: 'yes please' }, 'SEED_DEMO must be true or false (or 1 or 0), not "yes please"'],
    [{ DATABASE_URL: 'mysql://db/store' }, 'DATABASE_URL must be a postgres:// URL (leave it unset for SQLite)'],
    [{ CORS_ORIGINS: 'https://app.example.com/path' }, 'CORS_ORIGINS must be a comma-separated list of origins'],
  ])('%p stops the start with one line', async (settings, message) => {
    const run = start({ DATA_DIR: tempDataDir(), ...settings });
    expect(await run.exited).toBe(1);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(message);
    expect(run.stdout).toBe('');
  });

  it('production without PUBLIC_URL: exactly one line naming it on stderr, exit code 1, nothing served or logged', async () => {
    const run = start({ DATA_DIR: tempDataDir(), NODE_ENV: 'production', SECRET_KEY: KEY, LOG_LEVEL: 'info' });
    expect(await run.exited).toBe(1);
    expect(run.stderr).toBe(
      'PUBLIC_URL is required in production: the https origin clients reach the service at (https://api.example.com), the OAuth issuer they check\n',
    );
    expect(run.stdout).toBe('');
  });

  it('an svc command in production names no issuer, so it runs without PUBLIC_URL (a migration job)', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [builtCli, 'migrate'], {
      env: { PATH: process.env.PATH ?? '', DATA_DIR: tempDataDir(), NODE_ENV: 'production', SECRET_KEY: KEY },
    });
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^applied 001_platform\n/);
  });

  it('a port in use is named, with exit code 1 and no stack', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, resolve));
    const { port } = holder.address() as net.AddressInfo;
    try {
      await expectRefusedStart(start({ DATA_DIR: tempDataDir(), PORT: String(port) }), `port ${port} is already in use`);
    } finally {
      holder.close();
    }
  });
});

describe('probes and the stop on SQLite', () => {
  it('serves with no demo unless asked, answers the probes, and stops on SIGTERM with exit 0 after readiness turns 503', async () => {
    const run = start({ DATA_DIR: tempDataDir(), SHUTDOWN_DELAY_MS: '60000', SHUTDOWN_TIMEOUT_MS: '1000' });
    const base = `http://127.0.0.1:${await run.port()}`;
    await until(async () => (await statusOf(`${base}/readyz`)) === 200);
    expect(await statusOf(`${base}/livez`)).toBe(200);
    expect(run.stdout).not.toContain('Demo store');
    run.child.kill('SIGTERM');
    // During the delay the instance still serves, but tells the load balancer to stop sending.
    await until(async () => (await statusOf(`${base}/readyz`)) === 503);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.headers.get('retry-after')).toBe('5');
    expect(await ready.json()).toMatchObject({ error: { code: 'SERVICE_UNAVAILABLE', message: 'Not ready: the instance is stopping.' } });
    expect(await statusOf(`${base}/livez`)).toBe(200);
    // A second signal, once the first's window has passed, does not wait for the delay.
    await new Promise((resolve) => setTimeout(resolve, SAME_STOP_MS));
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(1);
    expect(run.stdout).toContain('second SIGTERM: exiting at once');
  });

  it('a signal delivered twice at once (Ctrl-C reaching the server and pnpm, which forwards it) is one stop: drained, exit 0', async () => {
    const run = start({ DATA_DIR: tempDataDir(), LOG_LEVEL: 'info', SHUTDOWN_DELAY_MS: '300', SHUTDOWN_TIMEOUT_MS: '1000' });
    const base = `http://127.0.0.1:${await run.port()}`;
    await until(async () => (await statusOf(`${base}/readyz`)) === 200);
    run.child.kill('SIGINT');
    run.child.kill('SIGINT');
    await until(async () => (await statusOf(`${base}/readyz`)) === 503);
    expect(await run.exited).toBe(0);
    expect(run.stdout.match(/SIGINT received: stopping/g)).toHaveLength(1);
    expect(run.stdout).not.toContain('second SIGINT');
  });

  it('a request that never sends its body does not hold the stop past SHUTDOWN_TIMEOUT_MS', async () => {
    const run = start({ DATA_DIR: tempDataDir(), SHUTDOWN_DELAY_MS: '0', SHUTDOWN_TIMEOUT_MS: '500' });
    const port = await run.port();
    await until(async () => (await statusOf(`http://127.0.0.1:${port}/readyz`)) === 200);
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"gra');
    const closedByServer = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    run.child.kill('SIGTERM');
    await closedByServer;
    expect(await run.exited).toBe(0);
    socket.destroy();
  });

  it('in production stdout holds JSON lines only, start lines included', async () => {
    const run = start({ DATA_DIR: tempDataDir(), NODE_ENV: 'production', SECRET_KEY: KEY, PUBLIC_URL, LOG_LEVEL: 'info', SHUTDOWN_DELAY_MS: '0' });
    const base = `http://127.0.0.1:${await run.port()}`;
    await until(async () => (await statusOf(`${base}/readyz`)) === 200);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    const messages = lines.map((line) => String(JSON.parse(line).msg));
    expect(messages).toContain('SIGTERM received: stopping');
    expect(messages.some((message) => message.startsWith('Store API http://localhost:'))).toBe(true);
  });

  it('in production a database that never answers keeps stdout JSON while the start retries, then refuses in one line naming DATABASE_URL', async () => {
    // A port that was free a moment ago: nothing listens there, so every connection is refused.
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as net.AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const run = start({
      NODE_ENV: 'production',
      SECRET_KEY: KEY,
      PUBLIC_URL,
      LOG_LEVEL: 'info',
      DATABASE_URL: `postgres://svc:svc@127.0.0.1:${port}/nowhere`,
      DATABASE_CONNECT_TIMEOUT_MS: '1500',
    });
    expect(await run.exited).toBe(1);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.every((line) => String(JSON.parse(line).msg).startsWith('the database does not answer yet'))).toBe(true);
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      `the service could not start: DATABASE_URL (PostgreSQL at 127.0.0.1:${port}/nowhere) does not answer: connect ECONNREFUSED 127.0.0.1:${port}`,
    ]);
  });
});

/** A TCP relay in front of PostgreSQL that a test can take down and bring back: an outage without stopping the shared server. */
function relayTo(target: URL) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const up = () =>
    new Promise<void>((resolve) => {
      const relay = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 5432), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => undefined);
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      server = relay;
      relay.listen(port, '127.0.0.1', () => {
        port = (relay.address() as net.AddressInfo).port;
        resolve();
      });
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
    });
  const reserve = async () => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    port = (probe.address() as net.AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
  };
  return { up, down, reserve, urlFor: (database: string) => `postgres://${target.username}:${target.password}@127.0.0.1:${port}${new URL(database).pathname}` };
}

describeOnPostgres('the built server on PostgreSQL', (_postgres, adminUrl) => {
  it('waits for a database that is not up yet, then serves', async () => {
    const database = await freshPostgresDatabase(adminUrl);
    const relay = relayTo(new URL(adminUrl));
    try {
      await relay.reserve();
      const run = start({ DATABASE_URL: relay.urlFor(database.url), DATA_DIR: tempDataDir(), SECRET_KEY: KEY, SHUTDOWN_DELAY_MS: '0' });
      await until(async () => run.stdout.includes('the database does not answer yet'));
      await relay.up();
      const base = `http://127.0.0.1:${await run.port()}`;
      await until(async () => (await statusOf(`${base}/readyz`)) === 200);
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    } finally {
      await relay.down();
      await database.drop();
    }
  });

  it('answers 503 with Retry-After while the database is away, and recovers without a restart', async () => {
    const database = await freshPostgresDatabase(adminUrl);
    const relay = relayTo(new URL(adminUrl));
    try {
      await relay.up();
      const run = start({ DATABASE_URL: relay.urlFor(database.url), DATA_DIR: tempDataDir(), SECRET_KEY: KEY, SHUTDOWN_DELAY_MS: '0' });
      const base = `http://127.0.0.1:${await run.port()}`;
      await until(async () => (await statusOf(`${base}/readyz`)) === 200);
      await relay.down();
      await until(async () => (await statusOf(`${base}/readyz`)) === 503);
      // The token endpoint looks the client up before anything else: a request that needs the database.
      const token = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Authorization: `Basic ${Buffer.from(`00000000-0000-4000-8000-000000000000:svc_cs_${'A'.repeat(43)}`).toString('base64')}`,
        },
        body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: 'svc_rt_x' }),
      });
      expect(token.status).toBe(503);
      expect(token.headers.get('retry-after')).toBe('5');
      expect(await token.json()).toMatchObject({ error: { code: 'SERVICE_UNAVAILABLE' } });
      await relay.up();
      await until(async () => (await statusOf(`${base}/readyz`)) === 200);
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    } finally {
      await relay.down();
      await database.drop();
    }
  });

  it.each([1, 2, 3])('two replicas starting together on a fresh database both come up (round %i)', async () => {
    const database = await freshPostgresDatabase(adminUrl);
    try {
      const replicas = [0, 1].map(() => start({ DATABASE_URL: database.url, DATA_DIR: tempDataDir(), SECRET_KEY: KEY, SHUTDOWN_DELAY_MS: '0' }));
      for (const replica of replicas) {
        const base = `http://127.0.0.1:${await replica.port()}`;
        await until(async () => (await statusOf(`${base}/readyz`)) === 200);
      }
      for (const replica of replicas) replica.child.kill('SIGTERM');
      expect(await Promise.all(replicas.map((replica) => replica.exited))).toEqual([0, 0]);
    } finally {
      await database.drop();
    }
  });

  it('takes its pool size and statement timeout from the settings', async () => {
    const db = createDatabase({ databaseUrl: adminUrl, dataDir: '', database: { poolMax: 3, statementTimeoutMs: 1234 } });
    try {
      const result = (await db.raw('show statement_timeout')) as { rows: Array<{ statement_timeout: string }> };
      expect(result.rows[0]?.statement_timeout).toBe('1234ms');
      expect(db.client.pool.max).toBe(3);
      await expect(db.raw('select pg_sleep(2)')).rejects.toMatchObject({ code: '57014' });
    } finally {
      await db.destroy();
    }
  });
});
