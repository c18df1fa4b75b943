import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import request from 'supertest';
import { createApp } from '../../src/app';
import { systemClock } from '../../src/core/clock';
import { createDatabase } from '../../src/db/connection';
import { engineOfHandle } from '../../src/db/engine';
import { migrateToLatest } from '../../src/db/migrate';
import { installDirectly } from '../../src/oauth/direct-install';
import { addVersion, registerApp } from '../../src/platform/apps';
import { createStore } from '../../src/platform/stores';
import { seedDemoCatalog } from '../../src/seeds/demo-catalog';
import { createServices, type Services } from '../../src/services/container';
import { insertProduct } from '../support/catalog-fixtures';
import { REPO_ROOT, type ServerProcess, startServerProcess, TSX } from '../support/spawned-server';

/**
 * Writers on one SQLite file wait for each other: every transaction takes the write lock when it
 * begins (a deferred one that read first is refused its upgrade at once, whatever the busy
 * timeout), and the wait is a timer, so the process keeps answering meanwhile.
 */

const CLI_SCRIPT = path.resolve(__dirname, '..', '..', 'src', 'cli', 'svc.ts');
const REDIRECT_URI = 'http://localhost:8787/callback';
const SCOPES = ['products:read', 'products:write', 'inventory:read', 'inventory:write'];
const UNLIMITED = { perInstallation: 1_000_000, perClient: 1_000_000 };

/** A migrated SQLite file in a fresh data directory, with services on the system clock (other processes use it). */
async function openDataDir(): Promise<{ dir: string; db: Knex; services: Services }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-writers-'));
  const db = createDatabase({ databaseUrl: undefined, dataDir: dir });
  await migrateToLatest(db);
  return { dir, db, services: createServices({ db, engine: engineOfHandle(db), clock: systemClock, rateLimits: UNLIMITED }) };
}

/** A store with `count` physical products and an app installed with SCOPES: its id, the products and a token. */
async function storeWithWriter(services: Services, name: string, count: number): Promise<{ storeId: string; productIds: number[]; token: string }> {
  const slug = `${name.toLowerCase().replace(/\W+/g, '-')}-${randomUUID().slice(0, 8)}`;
  const { store } = await createStore(services, {
    name,
    domain: `${slug}.example`,
    owner: { email: `owner@${slug}.example`, name: 'Noura', password: 'correct horse battery staple' },
  });
  const productIds: number[] = [];
  for (let index = 0; index < count; index += 1) {
    productIds.push(await insertProduct(services.db, store.id, { status: 'active', price_state: 'ready', price_halalas: 10_000, quantity: 50 }));
  }
  const { app } = await registerApp(services, { name: `${name} writer` });
  await addVersion(services, app.id, { redirectUrls: [REDIRECT_URI], launchUrl: 'http://localhost:8787/launch', requiredScopes: SCOPES, optionalScopes: [] });
  const tokens = await installDirectly(services, { storeId: store.id, appId: app.id, scopes: SCOPES, redirectUri: REDIRECT_URI });
  return { storeId: store.id, productIds, token: tokens.access_token };
}

/** A gate the test opens later: work that waits on it stays in flight. */
function gate(): { open: () => void; passed: Promise<void> } {
  let open = () => {};
  const passed = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, passed };
}

describe('writers on one SQLite file, in one process', () => {
  let dir: string;
  let db: Knex;
  let other: Knex;
  let services: Services;

  beforeAll(async () => {
    ({ dir, db, services } = await openDataDir());
    other = createDatabase({ databaseUrl: undefined, dataDir: dir });
    await db.schema.createTable('writer_marks', (table) => {
      table.increments('id');
      table.string('by').notNullable();
    });
  });
  afterAll(async () => {
    await Promise.all([db.destroy(), other.destroy()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a transaction that reads, then writes after another connection committed, commits instead of failing: the other waits for it', async () => {
    const hasRead = gate();
    const mayWrite = gate();
    const reader = db.transaction(async (trx) => {
      await trx('writer_marks').count({ n: '*' });
      hasRead.open();
      await mayWrite.passed;
      await trx('writer_marks').insert({ by: 'reader' });
    });
    await hasRead.passed;
    // Under a deferred BEGIN this write committed at once, and the reader's insert then failed
    // with SQLITE_BUSY: its snapshot was older than the file.
    const outside = other('writer_marks')
      .insert({ by: 'outside' })
      .then(() => 'inserted');
    const first = await Promise.race([outside, new Promise((resolve) => setTimeout(() => resolve('waiting'), 50))]);
    expect(first).toBe('waiting');
    mayWrite.open();
    await reader;
    expect(await outside).toBe('inserted');
    expect(await db('writer_marks').orderBy('id').pluck('by')).toEqual(['reader', 'outside']);
  });

  it('answers a read while a write waits for the lock, and past the wait answers the write 503 SERVICE_UNAVAILABLE with Retry-After, not 500', async () => {
    const { storeId, productIds, token } = await storeWithWriter(services, 'Locked Store', 1);
    const productId = productIds[0] as number;
    const app = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services });
    const product = `/stores/${storeId}/v1/products/${productId}`;
    const etag = (await request(app).get(product).set('Authorization', `Bearer ${token}`).expect(200)).headers.etag as string;

    const release = gate();
    const held = gate();
    // Another process's writer, as far as `db` can tell: a connection of its own holding the lock.
    const holder = other.transaction(async (trx) => {
      await trx('writer_marks').insert({ by: 'holder' });
      held.open();
      await release.passed;
    });
    await held.passed;
    try {
      const order: string[] = [];
      const write = request(app)
        .patch(`${product}/content`)
        .set('Authorization', `Bearer ${token}`)
        .set('If-Match', etag)
        .send({ name: 'Renamed while locked' })
        .then((response) => {
          order.push('write');
          return response;
        });
      const read = request(app)
        .get(product)
        .set('Authorization', `Bearer ${token}`)
        .then((response) => {
          order.push('read');
          return response;
        });
      expect((await read).status).toBe(200);
      const refused = await write;
      expect(order).toEqual(['read', 'write']);
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(refused.headers['retry-after']).toBe(String(refused.body.error.retry_after_seconds));
      expect(JSON.stringify(refused.body)).not.toMatch(/locked/i);
    } finally {
      release.open();
      await holder;
    }
    // Once the lock is free the same write goes through.
    await request(app).patch(`${product}/content`).set('Authorization', `Bearer ${token}`).set('If-Match', etag).send({ name: 'Renamed' }).expect(200);
  }, 30_000);
});

/** The environment of a CLI process on the data directory: SQLite, whatever the test run's own settings. */
function sqliteEnvironment(dir: string): NodeJS.ProcessEnv {
  const { DATABASE_URL: _, ...env } = process.env;
  return { ...env, DATA_DIR: dir };
}

interface CliOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc …` on the data directory to its end. */
async function svc(dir: string, args: string[]): Promise<CliOutcome> {
  const child = spawn(TSX, [CLI_SCRIPT, ...args], { cwd: REPO_ROOT, env: sqliteEnvironment(dir), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

interface Answer {
  status: number;
  body: string;
}

describe('the server under write load beside `svc simulate` and `svc store create`, each in a process of its own', () => {
  let dir: string;
  let db: Knex;
  let services: Services;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    ({ dir, db, services } = await openDataDir());
  });
  afterAll(async () => {
    await server?.stop();
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 20_000);

  it('nobody meets "database is locked": the commands succeed, every request is answered 2xx, and the writes interleave', async () => {
    const { store: simulated } = await createStore(services, {
      name: 'Simulated Store',
      domain: 'simulated-store.example',
      owner: { email: 'owner@simulated-store.example', name: 'Noura', password: 'correct horse battery staple' },
    });
    await seedDemoCatalog(services, simulated.id);
    const busy = await storeWithWriter(services, 'Busy Store', 3);
    server = await startServerProcess({ TEST_DATA_DIR: dir, TEST_RATE_LIMIT: '1000000' });
    const { origin } = server;

    const answers: Answer[] = [];
    let commandsDone = false;
    const send = async (method: string, url: string, headers: Record<string, string>, body?: object): Promise<Response> => {
      const response = await fetch(`${origin}/stores/${busy.storeId}/v1${url}`, {
        method,
        headers: { Authorization: `Bearer ${busy.token}`, ...headers, ...(body ? { 'Content-Type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await response.clone().text();
      answers.push({ status: response.status, body: text });
      return response;
    };
    // One writer per product, as apps would: a stock adjustment (Idempotency-Key: a claim outside
    // the transaction, then the work in one), then a content update under the ETag just read.
    const writer = async (productId: number) => {
      for (let round = 0; !commandsDone; round += 1) {
        await send('POST', `/products/${productId}/inventory-adjustments`, { 'Idempotency-Key': randomUUID() }, { delta: 1, reason: 'restock' });
        const etag = (await send('GET', `/products/${productId}`, {})).headers.get('etag') as string;
        await send('PATCH', `/products/${productId}/content`, { 'If-Match': etag }, { name: `Busy product ${productId}, round ${round}` });
      }
    };
    const writers = Promise.all(busy.productIds.map(writer));

    const [simulation, created] = await Promise.all([
      svc(dir, ['simulate', '--store', simulated.id, '--days', '30', '--orders', '300', '--seed', '11', '--json']),
      svc(dir, [
        'store',
        'create',
        '--name',
        'Beside Store',
        '--domain',
        'beside-store.example',
        '--owner-email',
        'owner@beside-store.example',
        '--password',
        'correct horse battery staple',
        '--json',
      ]),
    ]).finally(() => {
      commandsDone = true;
    });
    await writers;

    for (const outcome of [simulation, created]) {
      expect(`${outcome.stdout}${outcome.stderr}`).not.toMatch(/locked/i);
      expect(outcome.code).toBe(0);
    }
    expect(await db('orders').where({ store_id: simulated.id }).count({ n: '*' })).toEqual([{ n: 300 }]);
    expect(await db('stores').where({ domain: 'beside-store.example' })).toHaveLength(1);

    expect(answers.filter((answer) => answer.status >= 300)).toEqual([]);
    expect(answers.length).toBeGreaterThan(busy.productIds.length * 2);

    // SQLite numbers rows in the order they were written: the server's events among the
    // simulation's show that each side committed between the other's transactions, not only before
    // or after them.
    const eventIds = async (storeId: string) =>
      ((await db.raw('select rowid as n from outbox_events where store_id = ? order by rowid', [storeId])) as Array<{ n: number }>).map((row) => row.n);
    const simulationEvents = await eventIds(simulated.id);
    const serverEvents = await eventIds(busy.storeId);
    const [first, last] = [simulationEvents[0] as number, simulationEvents[simulationEvents.length - 1] as number];
    expect(serverEvents.filter((id) => id > first && id < last).length).toBeGreaterThan(0);
  }, 120_000);
});
