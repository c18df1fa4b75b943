import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { type TestDatabase, testDatabases } from '../support/databases';
import { createTestApp, createTestStore, installWithTokens, type StoreFixture, suiteHarness } from '../support/harness';
import { countTokens, expectAccessRefused, expectAccessWorks, expectOneSharedPair, postToken, refreshBody } from '../support/token-client';

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const TSX = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
const SERVER_SCRIPT = path.resolve(__dirname, '..', 'support', 'server-process.ts');
const START_MS = 60_000;

interface ServerProcess {
  origin: string;
  stop(): Promise<void>;
}

/** Ends the process group this test started (tsx runs the script in a child of its own). */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = once(child, 'exit');
  process.kill(-child.pid, 'SIGTERM');
  const timer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, 'SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Starts `server-process.ts` on the schema and waits for its `LISTENING <port>` line. */
function startServerProcess(databaseUrl: string, schema: string): Promise<ServerProcess> {
  const child = spawn(TSX, [SERVER_SCRIPT], {
    cwd: REPO_ROOT,
    env: { ...process.env, TEST_PG_URL: databaseUrl, TEST_PG_SCHEMA: schema },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const fail = (message: string) => settle(() => void stopGroup(child).finally(() => reject(new Error(`${message}\n${output}`))));
    const timer = setTimeout(() => fail(`The server process printed no LISTENING line within ${START_MS / 1000} s`), START_MS);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const port = /LISTENING (\d+)/.exec(output)?.[1];
      if (port) settle(() => resolve({ origin: `http://127.0.0.1:${port}`, stop: () => stopGroup(child) }));
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.once('error', (error) => fail(`The server process did not start: ${error.message}`));
    child.once('exit', (code, signal) => fail(`The server process ended (${code ?? signal}) before listening`));
  });
}

const postgres = testDatabases().find((database) => database.name === 'postgres');
const describeOnPostgres = postgres ? describe : describe.skip;

describeOnPostgres(`two server processes on one PostgreSQL schema${postgres ? '' : ' (skipped: TEST_DATABASE_URL is not set)'}`, () => {
  const testDatabase = postgres as TestDatabase;
  const h = suiteHarness(testDatabase, { teardownMs: START_MS });
  h.atEnd(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });
  let store: StoreFixture;
  let servers: ServerProcess[] = [];

  beforeAll(async () => {
    // The processes run on the system clock: issue everything at the real time.
    h.clock.set(Date.now());
    store = await createTestStore(h);
    const { rows } = (await h.db.raw('select current_schema() as schema')) as { rows: { schema: string }[] };
    const schema = rows[0]?.schema as string;
    const started = await Promise.allSettled([
      startServerProcess(process.env.TEST_DATABASE_URL as string, schema),
      startServerProcess(process.env.TEST_DATABASE_URL as string, schema),
    ]);
    servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const failure = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failure) throw failure.reason;
    // Warm both up as a deployed instance is (the request validator compiles on first use), so the
    // burst below tests coordination, not a cold start.
    for (const server of servers) await fetch(`${server.origin}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token' }) });
  }, 2 * START_MS);

  const serverFor = (i: number) => servers[i % servers.length] as ServerProcess;

  it(
    '20 identical concurrent refreshes split across both processes are one operation: exactly one new pair, received by all',
    async () => {
      const client = await createTestApp(h);
      const tokens = await installWithTokens(h, store, client, ['products:read']);
      const before = await countTokens(h.db);

      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => postToken(serverFor(i).origin, client.basic, refreshBody(tokens.refresh_token), i % 4 < 2 ? 'form' : 'json')),
      );

      const pair = expectOneSharedPair(responses);
      expect(await countTokens(h.db)).toBe(before + 2);
      expect(await countTokens(h.db, { operation_id: pair.operation_id })).toBe(2);
      for (const server of servers) {
        await expectAccessWorks(server.origin, store.store.id, pair.access_token);
        await expectAccessRefused(server.origin, store.store.id, tokens.access_token);
      }
    },
    START_MS,
  );
});
