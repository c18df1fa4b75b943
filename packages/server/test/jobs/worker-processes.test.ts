import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import type { Knex } from 'knex';
import { until as poll } from '../../../../tools/testbed/until';
import { systemClock } from '../../src/core/clock';
import { engineOfHandle } from '../../src/db/engine';
import { createDispatcher } from '../../src/delivery/dispatcher';
import { createProduct } from '../../src/domain/catalog/products/changes';
import { createServices, TOOLS_KEY } from '../../src/services/container';
import { type TestDatabase, testDatabases } from '../support/databases';
import { createTestStore, localOnlyResolver, suiteHarness } from '../support/harness';
import { type Receiver, startReceiver } from '../support/webhook-receiver';
import { installSubscriber, subscribe } from '../support/webhooks';

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const SVC = path.resolve(__dirname, '..', '..', 'src', 'cli', 'svc.ts');
const WAIT_MS = 60_000;

/** The environment of a `svc worker` on the suite's own database (an SQLite file, or a PostgreSQL schema via search_path). */
async function workerEnvironment(testDatabase: TestDatabase, db: Knex): Promise<NodeJS.ProcessEnv> {
  const base: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test', SECRET_KEY: TOOLS_KEY.toString('hex'), WEBHOOK_RETRY_SCHEDULE: '200,200,200' };
  if (testDatabase.name === 'postgres') {
    const { rows } = (await db.raw('select current_schema() as schema')) as { rows: { schema: string }[] };
    const url = new URL(process.env.TEST_DATABASE_URL as string);
    url.searchParams.set('options', `-c search_path=${rows[0]?.schema}`);
    return { ...base, DATABASE_URL: url.toString() };
  }
  const files = (await db.raw('pragma database_list')) as { name: string; file: string }[];
  const main = files.find((file) => file.name === 'main')?.file as string;
  const { DATABASE_URL: _ignored, ...withoutUrl } = base;
  return { ...withoutUrl, DATA_DIR: path.dirname(main) };
}

interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
}

/** Starts `svc worker` (one Node process, TypeScript loaded by tsx's hook) and waits until it says it is delivering. */
function startWorker(env: NodeJS.ProcessEnv): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', SVC, 'worker', '--concurrency', '8'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc worker did not start within ${WAIT_MS / 1000} s\n${output}`)), WAIT_MS);
    child.stderr?.on('data', () => {
      if (output.includes('svc worker: delivering webhooks')) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    });
    child.once('exit', (code, signal) => reject(new Error(`svc worker ended (${code ?? signal}) before it started\n${output}`)));
  });
}

/** Signals the worker and waits for it to end: its exit code, or null when a signal ended it. */
async function signal(worker: WorkerProcess, name: 'SIGKILL' | 'SIGTERM'): Promise<number | null> {
  const { child } = worker;
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return child.exitCode;
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  child.kill(name);
  const [code] = await exited;
  return code;
}

const until = (condition: () => Promise<boolean> | boolean, what: string) => poll(condition, { what, timeoutMs: WAIT_MS, everyMs: 100, rethrow: true });

describe.each(testDatabases())('svc worker processes on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { teardownMs: WAIT_MS });
  let receiver: Receiver;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
    h.atEnd(() => receiver.close());
    h.atEnd(async () => {
      for (const worker of workers) await signal(worker, 'SIGKILL');
    });
  });

  /** A store with a subscription to product.created on its own receiver path, and `count` products created in it. */
  async function eventsFor(path: string, count: number): Promise<{ subscriptionId: string; eventIds: string[] }> {
    const store = await createTestStore(h);
    const subscriber = await installSubscriber(h, store, ['products:read']);
    const { id } = await subscribe(h, store.store.id, subscriber, { endpoint_url: receiver.url(path), event_types: ['product.created'] });
    const actor = { storeId: store.store.id, installationId: null, now: Date.now() };
    for (let index = 0; index < count; index += 1) await createProduct(h.db, actor, { name: `Product ${index}`, product_kind: 'physical' });
    const rows = await h.db('outbox_events').where({ store_id: store.store.id, type: 'product.created' }).select<{ id: string }[]>('id');
    return { subscriptionId: id, eventIds: rows.map((row) => row.id).sort() };
  }

  /** The event ids the receiver answered 2xx at this path, each as often as it did. */
  const acknowledged = (path: string, answeredFrom: number) =>
    receiver
      .receivedAt(path)
      .slice(answeredFrom)
      .map((request) => String(request.headers['webhook-id']));

  it('loses nothing when a worker is killed with SIGKILL mid-delivery: another takes its deliveries once their lease lapses', async () => {
    const path = '/killed';
    receiver.answer(path, 'hang');
    const { subscriptionId, eventIds } = await eventsFor(path, 12);
    const env = await workerEnvironment(testDatabase, h.db);
    const first = await startWorker(env);
    workers.push(first);
    await until(() => receiver.receivedAt(path).length > 0, 'the first worker is mid-delivery');
    expect(await signal(first, 'SIGKILL')).toBeNull();
    const hung = receiver.receivedAt(path).length;
    expect(await h.db('webhook_deliveries').where({ subscription_id: subscriptionId, state: 'succeeded' })).toEqual([]);
    // The killed worker's leases would lapse after policyLeaseMs (45 s), when its queue is due again;
    // the test moves both into the past instead of waiting.
    await h
      .db('webhook_deliveries')
      .where({ subscription_id: subscriptionId })
      .whereNotNull('claimed_until')
      .update({ claimed_until: Date.now() - 1 });
    await h
      .db('webhook_queues')
      .where({ subscription_id: subscriptionId })
      .update({ next_due_at: Date.now() - 1 });
    receiver.answer(path, 200);
    const second = await startWorker(env);
    workers.push(second);
    await until(
      async () => (await h.db('webhook_deliveries').where({ subscription_id: subscriptionId, state: 'succeeded' })).length === eventIds.length,
      'every event is delivered',
    );
    expect([...new Set(acknowledged(path, hung))].sort()).toEqual(eventIds);
    expect(await signal(second, 'SIGTERM')).toBe(0);
  });

  it('with METRICS_PORT serves its own /metrics: its attempts by outcome, its claims and the process figures; without it, no listener', async () => {
    const path = '/counted';
    const { subscriptionId, eventIds } = await eventsFor(path, 5);
    const env = await workerEnvironment(testDatabase, h.db);
    const counted = await startWorker({ ...env, METRICS_PORT: '0' });
    workers.push(counted);
    const url = /svc worker: metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(counted.output())?.[1];
    if (!url) throw new Error(`svc worker named no metrics address\n${counted.output()}`);
    await until(
      async () => (await h.db('webhook_deliveries').where({ subscription_id: subscriptionId, state: 'succeeded' })).length === eventIds.length,
      'every event is delivered',
    );
    const scrape = await fetch(url);
    expect(scrape.status).toBe(200);
    const text = await scrape.text();
    const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(sample('svc_webhook_delivery_duration_seconds_count\\{outcome="succeeded"\\}')).toBe(eventIds.length);
    expect(sample('svc_webhook_claimed_deliveries_total')).toBe(eventIds.length);
    expect(sample('svc_webhook_claims_total')).toBeGreaterThanOrEqual(1);
    expect(sample('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(await signal(counted, 'SIGTERM')).toBe(0);
    await expect(fetch(url)).rejects.toThrow();

    const quiet = await startWorker(env);
    workers.push(quiet);
    expect(quiet.output()).not.toContain('metrics at');
    expect(await signal(quiet, 'SIGTERM')).toBe(0);
  });

  it('refuses to start, in one line, when its METRICS_PORT is taken', async () => {
    const taken = net.createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    try {
      const port = (taken.address() as AddressInfo).port;
      const env = { ...(await workerEnvironment(testDatabase, h.db)), METRICS_PORT: String(port) };
      const child = spawn(process.execPath, ['--import', 'tsx', SVC, 'worker'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      const [code] = (await once(child, 'exit')) as [number | null];
      expect({ code, stderr: stderr.trim() }).toEqual({ code: 1, stderr: `error: METRICS_PORT ${port} on 127.0.0.1 cannot be had (EADDRINUSE)` });
    } finally {
      taken.close();
    }
  });

  it('shares the work between two svc workers and two server dispatchers: every event delivered, no attempt made twice', async () => {
    const path = '/shared';
    const { subscriptionId, eventIds } = await eventsFor(path, 60);
    const env = await workerEnvironment(testDatabase, h.db);
    const processes = [await startWorker(env), await startWorker(env)];
    workers.push(...processes);
    const other = await testDatabase.openAnother();
    const inProcess = [h.db, other].map((db) =>
      createDispatcher(
        createServices({
          db,
          engine: engineOfHandle(db),
          clock: systemClock,
          rateLimits: { perInstallation: 1000, perClient: 1000 },
          webhooks: { environment: 'test', resolve: localOnlyResolver },
        }),
        {
          pollMs: 100,
        },
      ),
    );
    for (const dispatcher of inProcess) dispatcher.start();
    try {
      await until(
        async () => (await h.db('webhook_deliveries').where({ subscription_id: subscriptionId, state: 'succeeded' })).length === eventIds.length,
        'every event is delivered',
      );
    } finally {
      await Promise.all(inProcess.map((dispatcher) => dispatcher.stop()));
    }
    const received = acknowledged(path, 0);
    expect(received.sort()).toEqual(eventIds);
    expect(await h.db('webhook_attempts').where({ subscription_id: subscriptionId })).toHaveLength(eventIds.length);
    for (const worker of processes) expect(await signal(worker, 'SIGTERM')).toBe(0);
  });
});
