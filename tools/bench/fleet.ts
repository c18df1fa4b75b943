import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { systemClock } from '../../packages/server/src/core/clock';
import { createDatabase } from '../../packages/server/src/db/connection';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { installDirectly } from '../../packages/server/src/oauth/direct-install';
import { addVersion, registerApp } from '../../packages/server/src/platform/apps';
import { createStore } from '../../packages/server/src/platform/stores';
import { seedCatalogForBench } from '../../packages/server/src/seeds/demo-catalog';
import { createServices, TOOLS_KEY } from '../../packages/server/src/services/container';

/**
 * `pnpm bench:fleet`: the built server on PostgreSQL with WEB_CONCURRENCY=1, 2 and N (this machine's
 * cores), as production runs it (`node packages/server/dist/main.js`, NODE_ENV=production, a log
 * line per request). For each count of processes, three cases, each warmed up then measured with
 * autocannon from this process: `products.get` (a product by id), `products.list` (a first page of
 * 25) and `inventory.adjust` (a write: one stock adjustment, its event and its idempotency key in one
 * transaction; the store API has no order-creating operation, so this is its order-like write). It
 * prints requests/s, the server's CPU ms per request (all its processes, from /proc) and p99 for
 * each, and the scaling: req/s with N processes over req/s with 1, and the gain per added process
 * (target: at least 0.8 of one process's throughput per added core, up to the cores the machine has).
 *
 * Environment: BENCH_DATABASE_URL (required: a PostgreSQL URL whose user may create databases; the
 * run makes one and drops it), BENCH_FLEET_PROCESSES (`1,2,<cores>`), BENCH_SECONDS (10),
 * BENCH_WARMUP_SECONDS (3), BENCH_CONNECTIONS (20), BENCH_PRODUCTS (10000), BENCH_CASES (all three).
 * Run `pnpm build` first: the bench starts the built server.
 */

function numberFromEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, not "${text}"`);
  return value;
}

const REPOSITORY = path.resolve(__dirname, '..', '..');
const BUILT_SERVER = path.join(REPOSITORY, 'packages', 'server', 'dist', 'main.js');
const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const CORES = os.availableParallelism();
const SECONDS = numberFromEnv('BENCH_SECONDS', 10);
const WARMUP_SECONDS = numberFromEnv('BENCH_WARMUP_SECONDS', Math.min(3, SECONDS));
const CONNECTIONS = Math.round(numberFromEnv('BENCH_CONNECTIONS', 20));
const PRODUCTS = Math.round(numberFromEnv('BENCH_PRODUCTS', 10_000));
const PROCESSES = [
  ...new Set(
    (process.env.BENCH_FLEET_PROCESSES ?? `1,2,${CORES}`).split(',').map((count) => {
      const value = Number(count.trim());
      if (!Number.isInteger(value) || value < 1 || value > 64) throw new Error(`BENCH_FLEET_PROCESSES takes counts from 1 to 64, not "${count}"`);
      return value;
    }),
  ),
].sort((a, b) => a - b);
const CASES = process.env.BENCH_CASES ? new Set(process.env.BENCH_CASES.split(',').map((name) => name.trim())) : undefined;
const SCOPES = ['products:read', 'inventory:read', 'inventory:write'];
const REDIRECT_URI = 'http://localhost:8787/callback';
/** /proc's clock ticks per second (USER_HZ), 100 on Linux everywhere that matters. */
const TICKS_PER_S = 100;

interface Fixture {
  readonly token: string;
  readonly storeId: string;
  readonly productIds: readonly number[];
}

/** A database of its own on BENCH_DATABASE_URL's server (the built server uses its default schema), dropped at the end. */
async function freshDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `svc_fleet_${randomBytes(6).toString('hex')}`;
  const admin = createDatabase({ databaseUrl: adminUrl, dataDir: '' });
  await admin.raw(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.destroy();
    },
  };
}

/** The store, its catalog and an installed app, written before any server starts. */
async function buildFixture(url: string): Promise<Fixture> {
  const db = createDatabase({ databaseUrl: url, dataDir: '' });
  try {
    await migrateToLatest(db);
    const services = createServices({ db, clock: systemClock, rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 } });
    const { store } = await createStore(services, {
      name: 'Fleet Store',
      domain: 'fleet-store.example',
      owner: { email: 'owner@fleet-store.example', name: 'Fleet Owner', password: randomBytes(16).toString('base64url') },
    });
    await seedCatalogForBench(db, store.id, PRODUCTS);
    const { app } = await registerApp(services, { name: 'Fleet Bench App' });
    await addVersion(services, app.id, { redirectUrls: [REDIRECT_URI], launchUrl: 'http://localhost:8787/launch', requiredScopes: SCOPES, optionalScopes: [] });
    const tokens = await installDirectly(services, { storeId: store.id, appId: app.id, scopes: SCOPES, redirectUri: REDIRECT_URI });
    const physical = await db('products').where({ store_id: store.id, product_kind: 'physical' }).select('id').limit(5000);
    return { token: tokens.access_token, storeId: store.id, productIds: physical.map((row: { id: number }) => Number(row.id)) };
  } finally {
    await db.destroy();
  }
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });

interface Server {
  readonly child: ChildProcess;
  readonly base: string;
  stop(): Promise<void>;
}

/** The built server with `processes` server processes, once every one of them listens. */
async function startServer(url: string, processes: number): Promise<Server> {
  const port = await freePort();
  const logFile = path.join(os.tmpdir(), `svc-fleet-${randomUUID()}.log`);
  const log = fs.openSync(logFile, 'w');
  const child = spawn(process.execPath, [BUILT_SERVER], {
    cwd: REPOSITORY,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      DATABASE_URL: url,
      SECRET_KEY: TOOLS_KEY.toString('hex'),
      PORT: String(port),
      WEB_CONCURRENCY: String(processes),
      RATE_LIMIT_PER_INSTALLATION: '1000000',
      SHUTDOWN_DELAY_MS: '0',
    },
    stdio: ['ignore', log, 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    fs.closeSync(log);
    fs.rmSync(logFile, { force: true });
  };
  // Every process says it listens (one process alone: its banner line names the port).
  const listening = () => {
    const text = fs.readFileSync(logFile, 'utf8');
    return processes === 1 ? text.includes(`"port":${port}`) : (text.match(/Server process \d+ listening/g) ?? []).length >= processes;
  };
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}) before listening`);
    if (listening()) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, base: `http://127.0.0.1:${port}`, stop };
}

/** The server's processes: the primary and, with WEB_CONCURRENCY above 1, its children. */
function processTree(pid: number): number[] {
  try {
    const children = fs
      .readdirSync(`/proc/${pid}/task`)
      .flatMap((task) => fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    return [pid, ...children.flatMap(processTree)];
  } catch {
    return [];
  }
}

/** CPU seconds the processes have used so far (user + system, from /proc/<pid>/stat). */
function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // A process that ended during the run is not counted: none should.
    }
  }
  return ticks / TICKS_PER_S;
}

interface Case {
  readonly name: string;
  readonly label: string;
  readonly method: 'GET' | 'POST';
  readonly expected: number;
  readonly path: () => string;
  readonly body?: string;
}

function casesOf(fixture: Fixture): Case[] {
  const base = `/stores/${fixture.storeId}/v1`;
  let next = 0;
  const nextId = () => fixture.productIds[next++ % fixture.productIds.length];
  const all: Case[] = [
    { name: 'products.get', label: 'GET /products/{id}', method: 'GET', expected: 200, path: () => `${base}/products/${nextId()}` },
    { name: 'products.list', label: 'GET /products?limit=25', method: 'GET', expected: 200, path: () => `${base}/products?limit=25` },
    {
      name: 'inventory.adjust',
      label: 'POST /products/{id}/inventory-adjustments',
      method: 'POST',
      expected: 201,
      path: () => `${base}/products/${nextId()}/inventory-adjustments`,
      body: JSON.stringify({ delta: 1, reason: 'restock' }),
    },
  ];
  return all.filter((each) => !CASES || CASES.has(each.name));
}

interface Figures {
  readonly processes: number;
  readonly name: string;
  readonly requestsPerS: number;
  readonly cpuMsPerRequest: number;
  readonly p99Ms: number;
  readonly errors: number;
}

function load(server: Server, fixture: Fixture, benchCase: Case, seconds: number) {
  return autocannon({
    url: server.base,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${fixture.token}`, 'content-type': 'application/json' },
    requests: [
      {
        method: benchCase.method,
        ...(benchCase.body ? { body: benchCase.body } : {}),
        setupRequest: (request) => ({
          ...request,
          path: benchCase.path(),
          ...(benchCase.method === 'POST' ? { headers: { ...request.headers, 'idempotency-key': randomUUID() } } : {}),
        }),
      },
    ],
  });
}

async function measure(server: Server, fixture: Fixture, benchCase: Case, processes: number): Promise<Figures> {
  const check = await fetch(server.base + benchCase.path(), {
    method: benchCase.method,
    headers: { authorization: `Bearer ${fixture.token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    ...(benchCase.body ? { body: benchCase.body } : {}),
  });
  if (check.status !== benchCase.expected) throw new Error(`${benchCase.name} answers ${check.status}: ${(await check.text()).slice(0, 200)}`);
  await load(server, fixture, benchCase, WARMUP_SECONDS);
  const pids = processTree(server.child.pid as number);
  const cpuBefore = cpuSeconds(pids);
  const result = await load(server, fixture, benchCase, SECONDS);
  const cpu = cpuSeconds(pids) - cpuBefore;
  const answered = result.requests.total;
  const unexpected = result.non2xx + result.errors + result.timeouts;
  return {
    processes,
    name: benchCase.name,
    requestsPerS: answered / SECONDS,
    cpuMsPerRequest: answered > 0 ? (cpu * 1000) / answered : Number.NaN,
    p99Ms: result.latency.p99,
    errors: unexpected,
  };
}

const pad = (text: string, width: number) => text.padStart(width);

async function main(): Promise<void> {
  if (!DATABASE_URL) throw new Error('BENCH_DATABASE_URL is required: the fleet runs on PostgreSQL (a user that may create databases)');
  if (!fs.existsSync(BUILT_SERVER)) throw new Error(`${BUILT_SERVER} is missing: run pnpm build first`);
  const [load1] = os.loadavg();
  console.log(
    `Fleet bench: ${CORES} CPUs (${os.cpus()[0]?.model.trim()}), Node ${process.version}, processes ${PROCESSES.join(', ')}, ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up + ${SECONDS} s per case, load average ${load1?.toFixed(2)}`,
  );
  if (PROCESSES.some((count) => count > CORES)) console.log(`  ! more processes than the ${CORES} cores: they share them`);
  const database = await freshDatabase(DATABASE_URL);
  const figures: Figures[] = [];
  try {
    console.log(`Store: ${PRODUCTS} products in a fresh database …`);
    const fixture = await buildFixture(database.url);
    const cases = casesOf(fixture);
    for (const processes of PROCESSES) {
      const server = await startServer(database.url, processes);
      try {
        for (const benchCase of cases) {
          const measured = await measure(server, fixture, benchCase, processes);
          figures.push(measured);
          console.log(
            `  ${processes} process${processes > 1 ? 'es' : ''}  ${benchCase.name.padEnd(17)} ${measured.requestsPerS.toFixed(0)} req/s, ${measured.cpuMsPerRequest.toFixed(3)} CPU ms/req, p99 ${measured.p99Ms} ms${measured.errors ? `, ${measured.errors} unexpected answers` : ''}`,
          );
        }
      } finally {
        await server.stop();
      }
    }
  } finally {
    await database.drop();
  }
  const [loadAfter] = os.loadavg();
  console.log('');
  console.log('processes  case               req/s  server CPU ms/req  p99 ms  × 1 process  gain per added process');
  console.log('---------  -----------------  -----  -----------------  ------  -----------  ----------------------');
  for (const row of figures) {
    const single = figures.find((each) => each.name === row.name && each.processes === PROCESSES[0]);
    const ratio = single && single.processes === 1 ? row.requestsPerS / single.requestsPerS : Number.NaN;
    const gain = row.processes > 1 && Number.isFinite(ratio) ? (ratio - 1) / (row.processes - 1) : Number.NaN;
    console.log(
      `${pad(String(row.processes), 9)}  ${row.name.padEnd(17)}  ${pad(row.requestsPerS.toFixed(0), 5)}  ${pad(row.cpuMsPerRequest.toFixed(3), 17)}  ${pad(row.p99Ms.toFixed(0), 6)}  ${pad(Number.isFinite(ratio) ? ratio.toFixed(2) : '', 11)}  ${pad(Number.isFinite(gain) ? gain.toFixed(2) : '', 22)}`,
    );
  }
  console.log('');
  console.log(
    `Target: a gain of at least 0.80 per added process, up to the ${CORES} cores. Load average ${load1?.toFixed(2)} before, ${loadAfter?.toFixed(2)} after:`,
  );
  console.log('the load generator and PostgreSQL share the machine with the server, so on few cores the figures show cost per request more than scaling.');
  if (figures.some((row) => row.errors > 0)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(`bench:fleet could not run: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
