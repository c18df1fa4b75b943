import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { freshPostgresDatabase } from '../../../../tools/testbed/postgres-database';
import { until } from '../../../../tools/testbed/until';
import { createDatabase } from '../../src/db/connection';
import { migrateToLatest, pendingContract } from '../../src/db/migrate';
import { ensureBuilt, type ServerRun, startBuiltServer } from '../support/built-server';
import { type BuiltRelease, buildRelease, PREVIOUS_RELEASE, PREVIOUS_RELEASE_COMMIT } from '../support/previous-release';
import { describeWith, POSTGRES } from '../support/requirements';
import { type Receiver, startReceiver } from '../support/webhook-receiver';

/**
 * A rolling deploy, as operators run one (docs/deploy.md "Migrations"; docs/decisions/
 * 0082-expand-then-contract.md): the previous release (support/previous-release.ts, built from its
 * commit) serves a database this tree's expand phase migrated, beside this tree's server; its
 * idempotent POSTs and their replays, a change under If-Match, and an order its CLI simulates (the
 * events fanned out and delivered by its dispatcher) all work, across the two releases too. Once it
 * has stopped, the contract phase runs and this tree's server still works.
 */

const KEY = 'b'.repeat(64);
/** Building the previous release (about 25 s here) and a rolling deploy's steps on a busy machine. */
const SUITE_MS = 300_000;

const SCOPES =
  'products:read products:write products.prices:read products.prices:write categories:read categories:write pages:read pages:write inventory:read inventory:write orders:read';

interface Answer {
  readonly status: number;
  readonly etag: string | null;
  readonly body: { data?: Record<string, unknown>; error?: { code: string } };
}

describeWith(PREVIOUS_RELEASE_COMMIT, `the previous release (${PREVIOUS_RELEASE.released}) during a rolling deploy`, () => {
  describeWith(POSTGRES, 'on PostgreSQL', () => {
    let release: BuiltRelease;
    let database: { url: string; drop: () => Promise<void> };
    let db: Knex;
    let receiver: Receiver;
    let storeId: string;
    let token: string;
    let previous: ServerRun;
    let current: ServerRun;
    let previousBase: string;
    let currentBase: string;
    const settings = () => ({ DATABASE_URL: database.url, SECRET_KEY: KEY, SHUTDOWN_DELAY_MS: '0', WEBHOOK_RETRY_SCHEDULE: '200,200,200' });

    /** The previous release's CLI on the shared database: its JSON document. */
    const previousCli = <T>(args: string[]): T =>
      JSON.parse(
        execFileSync(process.execPath, [release.cli, ...args, '--json'], {
          cwd: release.root,
          env: { PATH: process.env.PATH ?? '', ...settings(), SVC_OWNER_PASSWORD: 'correct-horse-battery' },
          encoding: 'utf8',
        }),
      ) as T;

    const call = async (base: string, method: string, path: string, { body, headers = {} }: { body?: unknown; headers?: Record<string, string> } = {}) => {
      const response = await fetch(`${base}/stores/${storeId}/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, etag: response.headers.get('etag'), body: (await response.json()) as Answer['body'] } satisfies Answer;
    };

    /** An idempotent POST and its replay under the same key: both answer the same, and the replay made nothing new. */
    const createTwice = async (base: string, path: string, body: unknown, replayAt = base) => {
      const key = randomUUID();
      const first = await call(base, 'POST', path, { body, headers: { 'idempotency-key': key } });
      const replay = await call(replayAt, 'POST', path, { body, headers: { 'idempotency-key': key } });
      expect({ path, status: first.status }).toEqual({ path, status: 201 });
      expect({ status: replay.status, id: replay.body.data?.id }).toEqual({ status: 201, id: first.body.data?.id });
      return { key, created: first };
    };

    const startServer = async (entry?: { entry: string; cwd: string }) => {
      const run = startBuiltServer(settings(), entry);
      const base = `http://127.0.0.1:${await run.port()}`;
      await until(async () => (await fetch(`${base}/readyz`)).status === 200);
      return { run, base };
    };

    const deliveredTypes = (path: string) => receiver.receivedAt(path).map((received) => (JSON.parse(received.body) as { type: string }).type);

    beforeAll(async () => {
      ensureBuilt();
      release = buildRelease(PREVIOUS_RELEASE.commit);
      // What CI spends on it (the suite's budget is about 3 minutes): printed with the suite's output.
      process.stdout.write(`previous release ${PREVIOUS_RELEASE.commit.slice(0, 7)} checked out, installed and built in ${release.buildMs} ms\n`);
      database = await freshPostgresDatabase(process.env.TEST_DATABASE_URL as string);
      db = createDatabase({ databaseUrl: database.url, dataDir: '' });
      // The database as the previous release left it, then this release's expand phase (`svc migrate` before the rollout).
      previousCli(['migrate']);
      const applied = await migrateToLatest(db);
      expect(applied).toContain('019_partitions');
      expect(applied.filter((name) => name.endsWith('(contract)'))).toEqual([]);
      const store = previousCli<{ store: { id: string } }>([
        'store',
        'create',
        '--name',
        'Oud House',
        '--domain',
        'oud-house.example.com',
        '--owner-email',
        'o@example.com',
      ]);
      storeId = store.store.id;
      const app = previousCli<{ app: { id: string } }>(['app', 'create', '--name', 'Stock Sync']);
      previousCli([
        'app',
        'version',
        'add',
        app.app.id,
        '--redirect-url',
        'https://app.example.com/cb',
        '--launch-url',
        'https://app.example.com/launch',
        '--required-scopes',
        SCOPES,
      ]);
      token = previousCli<{ access_token: string }>(['installation', 'create', app.app.id, storeId]).access_token;
      receiver = await startReceiver();
      ({ run: previous, base: previousBase } = await startServer({ entry: release.server, cwd: release.root }));
      ({ run: current, base: currentBase } = await startServer());
    }, SUITE_MS);

    afterAll(async () => {
      for (const run of [previous, current]) if (run && run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
      await receiver?.close();
      await db?.destroy();
      await database?.drop();
      release?.remove();
    });

    it('writes through the previous release: idempotent POSTs and replays, a change under If-Match, an order simulated and delivered', async () => {
      const path = '/from-previous';
      await createTwice(previousBase, '/webhook-subscriptions', { endpoint_url: receiver.url(path), event_types: ['order.created', 'product.created'] });
      const { created: product } = await createTwice(previousBase, '/products', { name: 'Royal Oud 100 ml', product_kind: 'physical' });
      await createTwice(previousBase, '/categories', { name: 'Incense Burners' });
      await createTwice(previousBase, '/pages', { title: 'About us' });
      await createTwice(previousBase, `/products/${product.body.data?.id}/inventory-adjustments`, { delta: 24, reason: 'restock' });
      const read = await call(previousBase, 'GET', `/products/${product.body.data?.id}`);
      const changed = await call(previousBase, 'PATCH', `/products/${product.body.data?.id}/content`, {
        body: { name: 'Royal Oud 100 ml (gift box)' },
        headers: { 'if-match': read.etag as string },
      });
      expect(changed.status).toBe(200);
      const stale = await call(previousBase, 'PATCH', `/products/${product.body.data?.id}/content`, {
        body: { name: 'Stale' },
        headers: { 'if-match': read.etag as string },
      });
      expect(stale.status).toBe(412);
      // Priced and in stock, so that the simulated shopper has something to buy.
      const priced = await call(previousBase, 'PATCH', `/products/${product.body.data?.id}/prices`, {
        body: { price: '349.00', old_price: null },
        headers: { 'if-match': changed.etag as string },
      });
      expect(priced.status).toBe(200);
      const active = await call(previousBase, 'PATCH', `/products/${product.body.data?.id}/content`, {
        body: { status: 'active' },
        headers: { 'if-match': priced.etag as string },
      });
      expect(active.status).toBe(200);
      previousCli(['simulate', '--store', storeId, '--days', '1', '--orders', '1', '--seed', '7']);
      await until(async () => deliveredTypes(path).includes('order.created') && deliveredTypes(path).includes('product.created'));
      // The current release is ready although the contract phase has not run.
      expect((await fetch(`${currentBase}/readyz`)).status).toBe(200);
      expect(await pendingContract(db)).toEqual(['018_store_keys', '019_partitions']);
    });

    it('serves beside the current release on the same database: each replays what the other answered', async () => {
      const fromPrevious = await createTwice(previousBase, '/products', { name: 'Amber 50 ml', product_kind: 'physical' }, currentBase);
      const fromCurrent = await createTwice(currentBase, '/products', { name: 'Musk 30 ml', product_kind: 'physical' }, previousBase);
      expect(fromPrevious.created.body.data?.id).not.toEqual(fromCurrent.created.body.data?.id);
      const id = fromPrevious.created.body.data?.id as string;
      const read = await call(currentBase, 'GET', `/products/${id}`);
      expect(
        (await call(currentBase, 'PATCH', `/products/${id}/content`, { body: { name: 'Amber 50 ml (new)' }, headers: { 'if-match': read.etag as string } }))
          .status,
      ).toBe(200);
      expect(
        (await call(previousBase, 'PATCH', `/products/${id}/content`, { body: { name: 'Stale' }, headers: { 'if-match': read.etag as string } })).status,
      ).toBe(412);
      await createTwice(currentBase, '/categories', { name: 'Oud chips' }, previousBase);
      // The events of both releases' writes reach the subscription the previous release made.
      await until(async () => deliveredTypes('/from-previous').filter((type) => type === 'product.created').length >= 3);
    });

    it('after the previous release stops, the contract phase runs and the current release keeps working', async () => {
      const before = await createTwice(currentBase, '/products', { name: 'Saffron 10 g', product_kind: 'physical' });
      previous.child.kill('SIGTERM');
      await previous.exited;
      expect(await migrateToLatest(db, { contract: true })).toEqual(['018_store_keys (contract)', '019_partitions (contract)']);
      const kind = await db.raw<{ rows: { kind: string }[] }>("select relkind as kind from pg_class where oid = to_regclass('idempotency_keys')");
      expect(kind.rows[0]?.kind).toBe('p');
      // A key used before the contract phase is still replayed, and new keys work.
      const replay = await call(currentBase, 'POST', '/products', {
        body: { name: 'Saffron 10 g', product_kind: 'physical' },
        headers: { 'idempotency-key': before.key },
      });
      expect(replay.body.data?.id).toEqual(before.created.body.data?.id);
      const { created } = await createTwice(currentBase, '/products', { name: 'Rose water', product_kind: 'physical' });
      await createTwice(currentBase, `/products/${created.body.data?.id}/inventory-adjustments`, { delta: 5, reason: 'restock' });
      await createTwice(currentBase, '/webhook-subscriptions', { endpoint_url: receiver.url('/after-contract'), event_types: ['product.created'] });
      await createTwice(currentBase, '/products', { name: 'Bakhoor', product_kind: 'physical' });
      await until(async () => deliveredTypes('/after-contract').includes('product.created'));
      expect(current.child.exitCode).toBeNull();
    });
  });
});
