/**
 * The built server and `svc worker` as an operator starts them, with sealing keys that do not fit
 * the database: each refuses with one line that says which key was expected and what to do, and
 * exits 1. The keys' own settings (both forms set, a bad entry of SECRET_KEYS) stop the start too.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { freshPostgresDatabase } from '../../../../tools/testbed/postgres-database';
import { builtCli, repositoryRoot } from '../../../../tools/testbed/repository';
import { until } from '../../../../tools/testbed/until';
import { derivedKey, keyIdOf } from '../../src/credentials/sealing';
import { builtServersPerTest, expectRefusedStart, statusOf, tempDataDir } from '../support/built-server';
import { describeOnPostgres } from '../support/databases';

jest.setTimeout(120_000);

const [FIRST, SECOND] = [derivedKey('start: first key'), derivedKey('start: second key')];
const hex = (key: Buffer) => key.toString('hex');

const start = builtServersPerTest();

/** Starts a server, waits until it is ready, and stops it (exit 0): the database's check is written by then. */
async function serveOnce(settings: Record<string, string>): Promise<void> {
  const run = start({ SHUTDOWN_DELAY_MS: '0', ...settings });
  const base = `http://127.0.0.1:${await run.port()}`;
  await until(async () => (await statusOf(`${base}/readyz`)) === 200);
  run.child.kill('SIGTERM');
  expect(await run.exited).toBe(0);
}

/** The one line a start with `key` prints on a database checked under `expected`. */
const refusal = (expected: Buffer, key: Buffer) =>
  `SECRET_KEY does not open this database's sealed values (key id ${keyIdOf(expected)} expected, this key is ${keyIdOf(key)}): give every instance the same SECRET_KEY or SECRET_KEYS`;

const expectRefused = (settings: Record<string, string>, line: string) => expectRefusedStart(start(settings), line);

describe('sealing keys at start on SQLite', () => {
  it('refuses a start whose key does not open the database, with one line; the first key, or a ring holding it, starts', async () => {
    const dataDir = tempDataDir();
    await serveOnce({ DATA_DIR: dataDir, SECRET_KEY: hex(FIRST) });
    await expectRefused({ DATA_DIR: dataDir, SECRET_KEY: hex(SECOND) }, refusal(FIRST, SECOND));
    await serveOnce({ DATA_DIR: dataDir, SECRET_KEYS: `${hex(SECOND)},${hex(FIRST)}` });
  });

  it('refuses svc worker with a key that does not open the database, with one line and exit 1', async () => {
    const dataDir = tempDataDir();
    await serveOnce({ DATA_DIR: dataDir, SECRET_KEY: hex(FIRST) });
    const worker = promisify(execFile)(process.execPath, [builtCli, 'worker'], {
      cwd: repositoryRoot,
      env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, SECRET_KEY: hex(SECOND) },
    });
    await expect(worker).rejects.toMatchObject({ code: 1, stdout: '', stderr: `error: ${refusal(FIRST, SECOND)}\n` });
  });

  it.each([
    [
      'SECRET_KEY and SECRET_KEYS both set',
      { SECRET_KEY: hex(FIRST), SECRET_KEYS: hex(FIRST) },
      'SECRET_KEY and SECRET_KEYS are both set: keep one (SECRET_KEYS=new,old while rotating, SECRET_KEY for a single key)',
    ],
    [
      'a bad entry of SECRET_KEYS',
      { SECRET_KEYS: `${hex(FIRST)},not-a-key` },
      'SECRET_KEYS entry 2 must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32)',
    ],
    ['a key twice in SECRET_KEYS', { SECRET_KEYS: `${hex(FIRST)},${hex(FIRST)}` }, 'SECRET_KEYS entry 2 repeats an earlier key'],
  ])('%s stops the start with one line, echoing no key', async (_case, settings, line) => {
    const run = start({ DATA_DIR: tempDataDir(), ...settings });
    await expectRefusedStart(run, line);
    expect(run.stderr).not.toContain(hex(FIRST));
    expect(run.stdout).toBe('');
  });
});

describeOnPostgres('sealing keys at start on PostgreSQL', (_postgres, adminUrl) => {
  it('refuses a development instance without SECRET_KEY instead of making a key of its own', async () => {
    const database = await freshPostgresDatabase(adminUrl);
    try {
      await expectRefused(
        { DATABASE_URL: database.url, DATA_DIR: tempDataDir() },
        "SECRET_KEY is required with DATABASE_URL: every instance on one PostgreSQL database must seal with the same key, and a key made in DATA_DIR is this machine's own (openssl rand -hex 32, then give every instance that SECRET_KEY)",
      );
    } finally {
      await database.drop();
    }
  });

  it('refuses a second instance whose key differs from the first one, while the first serves', async () => {
    const database = await freshPostgresDatabase(adminUrl);
    try {
      const first = start({ DATABASE_URL: database.url, DATA_DIR: tempDataDir(), SECRET_KEY: hex(FIRST), SHUTDOWN_DELAY_MS: '0' });
      const base = `http://127.0.0.1:${await first.port()}`;
      await until(async () => (await statusOf(`${base}/readyz`)) === 200);
      await expectRefused({ DATABASE_URL: database.url, DATA_DIR: tempDataDir(), SECRET_KEY: hex(SECOND) }, refusal(FIRST, SECOND));
      await serveOnce({ DATABASE_URL: database.url, DATA_DIR: tempDataDir(), SECRET_KEY: hex(FIRST) });
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
    } finally {
      await database.drop();
    }
  });
});
