import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { riyadhDay } from '../../packages/server/src/domain/storefront/pricing';
import {
  type Child,
  keepClientOffServerCpus,
  nextMessage,
  numberFromEnv,
  offerLoad,
  SERVER_CPUS,
  serverCpu,
  spreadProductIds,
  startChild,
  stopChild,
  tell,
} from './children';
import type { LoadResult } from './paced-load';
import type { FirstStartReadyMessage, ReadyMessage, StoreReadyMessage } from './protocol';
import { describeStart, measureStart, type StartFigures } from './start-time';
import { percentile } from './stats';
import { benchWebhooks, type WebhookFigures } from './webhooks';

/**
 * `pnpm bench`: the store API's read path against a bare Express app, on this machine.
 *
 * Two server processes (the real server over SQLite with a store of BENCH_PRODUCTS products, and a
 * bare Express 5 app), the load generator (autocannon, or an even pace) here in the parent: on two cores, each
 * server gets one and the client the other. Every case is warmed up first, then measured. The bench
 * reports the figures and its targets without asserting them; it exits 1 when it cannot run, or when
 * a case does not answer 200 (that case gets no figure: an error's speed means nothing).
 *
 * Environment: BENCH_SECONDS (10) per measured run, BENCH_WARMUP_SECONDS (3), BENCH_CONNECTIONS
 * (10), BENCH_RATE (requests per second arriving evenly at each case, to compare servers at the same
 * load, tools/bench/paced-load.ts; unset, each case runs as fast as its server answers), BENCH_SERVER_CPUS (the servers on these
 * CPUs, the load generator on the others), BENCH_PRODUCTS (100000), BENCH_ORDERS (100000, simulated over 90 days; the store is built
 * once and kept under BENCH_DATA_DIR, `data/bench`), BENCH_PROFILE=<dir> (CPU profiles of the
 * servers over each measured run), BENCH_CASES=hello,products.get,… (only these; the servers and
 * their store are started only for their cases), BENCH_JSON=<file>
 * (the figures as JSON), BENCH_METRICS=1 (the store API's server keeps Prometheus metrics, as with METRICS_PORT), BENCH_DATABASE_URL (the store API's cases run on SQLite
 * and then again on PostgreSQL, in schemas made and dropped by the run, and a table sets their server
 * CPU per request side by side; the PostgreSQL store has BENCH_ORDERS orders, 0 unless given; the
 * webhook cases run on PostgreSQL), BENCH_WEBHOOK_DELIVERIES and BENCH_WEBHOOK_BURST (10000 each) and
 * BENCH_WEBHOOK_RECOVERY (7000; the webhook cases, tools/bench/webhooks.ts).
 *
 * `reads during simulation`: a server of its own at its first start on an empty SQLite directory
 * (tools/bench/first-start.ts) simulates the demo store's history, as `pnpm start` does, while
 * reads are sent at a steady pace; their p99 against a target of 100 ms.
 */

const SECONDS = numberFromEnv('BENCH_SECONDS', 10);
const WARMUP_SECONDS = numberFromEnv('BENCH_WARMUP_SECONDS', Math.min(3, SECONDS));
const CONNECTIONS = Math.round(numberFromEnv('BENCH_CONNECTIONS', 10));
keepClientOffServerCpus();

/** BENCH_RATE: requests per second offered to every case (0, the default: as many as the server answers). */
const RATE = numberFromEnv('BENCH_RATE', 0, { zero: true });
const PRODUCTS = Math.round(numberFromEnv('BENCH_PRODUCTS', 100_000));
/** BENCH_DATABASE_URL: the store API over PostgreSQL instead, its store built anew each run (no orders unless asked: simulating them over the network takes long). */
const POSTGRES_URL = process.env.BENCH_DATABASE_URL || undefined;
/** Orders of the SQLite store, and of the PostgreSQL one (simulating them over the network takes long). */
const SQLITE_ORDERS = Math.round(numberFromEnv('BENCH_ORDERS', 100_000, { zero: true }));
const POSTGRES_ORDERS = Math.round(numberFromEnv('BENCH_ORDERS', 0, { zero: true }));

/** Where a pass of the store API's cases keeps its store: SQLite always, PostgreSQL beside it when BENCH_DATABASE_URL is set. */
interface StoreDatabase {
  readonly name: 'SQLite' | 'PostgreSQL';
  readonly postgresUrl?: string;
  /** The first pass also measures the bare Express app. */
  readonly first: boolean;
}

const STORE_DATABASES: readonly StoreDatabase[] = [
  { name: 'SQLite', first: true },
  ...(POSTGRES_URL ? [{ name: 'PostgreSQL' as const, postgresUrl: POSTGRES_URL, first: false }] : []),
];

/** The goal for a product read (docs/performance.md): PostgreSQL's server CPU per request at most this many times SQLite's. */
const POSTGRES_READ_GOAL = 1.2;
const PROFILE_DIR = process.env.BENCH_PROFILE ? path.resolve(process.env.BENCH_PROFILE) : undefined;
/** Only these cases (comma-separated names), e.g. `hello,products.get` while profiling. */
const CASES = process.env.BENCH_CASES ? new Set(process.env.BENCH_CASES.split(',').map((name) => name.trim())) : undefined;
const JSON_FILE = process.env.BENCH_JSON ? path.resolve(process.env.BENCH_JSON) : undefined;
/** The webhook cases (tools/bench/webhooks.ts): deliveries queued at once, one subscription's replayed backlog, and the burst whose outbox lag is measured. */
const WEBHOOK_DELIVERIES = Math.round(numberFromEnv('BENCH_WEBHOOK_DELIVERIES', 10_000));
const WEBHOOK_BURST = Math.round(numberFromEnv('BENCH_WEBHOOK_BURST', 10_000));
/** One subscription's replayed backlog, what every recovery is (`webhooks.recovery`). */
const WEBHOOK_RECOVERY = Math.round(numberFromEnv('BENCH_WEBHOOK_RECOVERY', 7_000));
/** The deep page starts after ~90 % of the store's products (id ~90,000 of 100,000). */
const DEEP_FRACTION = 0.9;
const WALK_LIMIT = 100;
const PAGE_LIMIT = 25;

// ---------------------------------------------------------------------------------------------
// Cases

interface Case {
  name: string;
  label: string;
  server: Child<ReadyMessage>;
  /** The path of each request (called per request: products.get walks over many ids). */
  nextPath: () => string;
  headers: Record<string, string>;
  /** The store API's database, when the cases run on both (its profiles are told apart by it). */
  database?: string;
}

interface Figures {
  name: string;
  label: string;
  /** The status of a check request sent before the run. */
  status: number;
  requestsPerSecond: number;
  latencyP50: number;
  latencyP99: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** CPU time over wall time during the measured run: 1.0 is one core busy all the time. */
  serverCpu: number;
  /** The kernel's part of serverCpu (system calls, and on loopback the receiving side of TCP too). */
  serverSystemCpu: number;
  clientCpu: number;
  /** Other processes' CPU over the run, in cores (Linux only): above ~0.1 the figures are disturbed. */
  otherCpu: number | undefined;
  profile?: string | undefined;
  /** The store API's database (`SQLite` or `PostgreSQL`); the bare Express case has none. */
  database?: string;
}

function load(benchCase: Case, seconds: number): Promise<LoadResult> {
  return offerLoad(benchCase.server.base, benchCase.nextPath, seconds, { connections: CONNECTIONS, rate: RATE, headers: benchCase.headers });
}

/** Cases that did not answer 200, with what they answered: they get no figure, and the bench exits 1. */
const failures: string[] = [];

async function check(benchCase: Case): Promise<number> {
  const response = await fetch(benchCase.server.base + benchCase.nextPath(), { headers: benchCase.headers });
  if (response.status !== 200) {
    const body = await response.text();
    failures.push(`${benchCase.name} answers ${response.status}: ${body.slice(0, 200)}`);
    console.error(`  ! ${benchCase.name} answers ${response.status}, not 200: not measured`);
  }
  return response.status;
}

/** Busy and total CPU time of the whole machine so far (Linux /proc/stat; undefined elsewhere). */
function machineCpu(): { busy: number; total: number } | undefined {
  try {
    const fields = (fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
    const [, , , idle = 0, iowait = 0] = fields;
    const total = fields.reduce((sum, value) => sum + value, 0);
    return { busy: total - idle - iowait, total };
  } catch {
    return undefined;
  }
}

async function measure(benchCase: Case): Promise<Figures | undefined> {
  if (CASES && !CASES.has(benchCase.name)) return undefined;
  const status = await check(benchCase);
  if (status !== 200) return undefined;
  process.stdout.write(`  ${benchCase.name.padEnd(22)} warm-up ${WARMUP_SECONDS} s, `);
  await load(benchCase, WARMUP_SECONDS);
  process.stdout.write(`measure ${SECONDS} s … `);
  const profileFile = PROFILE_DIR ? path.join(PROFILE_DIR, `${benchCase.name}${benchCase.database ? `.${benchCase.database}` : ''}.cpuprofile`) : undefined;
  if (profileFile) tell(benchCase.server.process, { type: 'profile-start' });
  const serverBefore = await serverCpu(benchCase.server);
  const clientBefore = process.cpuUsage();
  const machineBefore = machineCpu();
  const started = performance.now();
  const result = await load(benchCase, SECONDS);
  const elapsedMicros = (performance.now() - started) * 1000;
  const clientUsed = process.cpuUsage(clientBefore);
  const machineAfter = machineCpu();
  const serverAfter = await serverCpu(benchCase.server);
  if (profileFile) {
    const profiled = nextMessage(benchCase.server.process, 'profiled');
    tell(benchCase.server.process, { type: 'profile-stop', file: profileFile });
    await profiled;
  }
  const figures: Figures = {
    name: benchCase.name,
    label: benchCase.label,
    status,
    requestsPerSecond: result.requests.average,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    serverCpu: (serverAfter.total - serverBefore.total) / elapsedMicros,
    serverSystemCpu: (serverAfter.system - serverBefore.system) / elapsedMicros,
    clientCpu: (clientUsed.user + clientUsed.system) / elapsedMicros,
    // The machine's busy cores minus the server's and the client's: other processes competing.
    otherCpu:
      machineBefore && machineAfter
        ? Math.max(
            0,
            ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * os.cpus().length -
              (serverAfter.total - serverBefore.total + clientUsed.user + clientUsed.system) / elapsedMicros,
          )
        : undefined,
    profile: profileFile,
  };
  console.log(`${Math.round(figures.requestsPerSecond)} req/s, p99 ${figures.latencyP99} ms`);
  return figures;
}

interface ListBody {
  data: { id: number }[];
  meta: { next_cursor: string | null };
}

/** Follows `next_cursor` (limit 100) until the page ends past `targetId`: the cursor of a deep page. */
async function deepCursor(
  base: string,
  storeId: string,
  headers: Record<string, string>,
  targetId: number,
): Promise<{ cursor: string; afterId: number; pages: number }> {
  let cursor: string | null = null;
  for (let pages = 1; ; pages += 1) {
    const query = new URLSearchParams({ limit: String(WALK_LIMIT), ...(cursor ? { cursor } : {}) });
    const response = await fetch(`${base}/stores/${storeId}/v1/products?${query}`, { headers });
    if (response.status !== 200) throw new Error(`products.list answered ${response.status} on page ${pages}: ${(await response.text()).slice(0, 200)}`);
    const body = (await response.json()) as ListBody;
    const last = body.data[body.data.length - 1];
    cursor = body.meta.next_cursor;
    if (!cursor || !last) throw new Error(`The list ended after ${pages} pages, before id ${targetId}`);
    if (last.id >= targetId) return { cursor, afterId: last.id, pages };
  }
}

// ---------------------------------------------------------------------------------------------
// Reads during a simulation

const SIMULATION_CASE = 'reads during simulation';
/**
 * One read sent this often, whatever the answers before it (an open loop: a stalled server shows
 * as the wait of every read sent meanwhile); a newcomer's pace, well below what the server can take.
 */
const PROBE_INTERVAL_MS = 50;
/** What a newcomer trying the API at first start waits for an answer, at most, nearly always. */
const SIMULATION_READ_TARGET_P99_MS = 100;

interface ReadLatencies {
  reads: number;
  latencyP50: number;
  latencyP99: number;
  latencyMax: number;
}

interface SimulationReadFigures {
  orders: number;
  simulationMs: number;
  /** The same reads before the simulation starts: this machine's own noise. */
  before: ReadLatencies;
  during: ReadLatencies;
}

function latenciesOf(milliseconds: readonly number[]): ReadLatencies {
  const sorted = [...milliseconds].sort((a, b) => a - b);
  return {
    reads: sorted.length,
    latencyP50: percentile(sorted, 0.5),
    latencyP99: percentile(sorted, 0.99),
    latencyMax: sorted[sorted.length - 1] ?? 0,
  };
}

const describeLatencies = ({ reads, latencyP50, latencyP99, latencyMax }: ReadLatencies) =>
  `${reads} reads, p50 ${fixed(latencyP50, 1)} ms, p99 ${fixed(latencyP99, 1)} ms, max ${fixed(latencyMax, 1)} ms`;

/**
 * The first start (first-start.ts) simulates the demo store's history in the server's process
 * while the API is meant to answer: reads (a product, an order page, in turn) sent every
 * PROBE_INTERVAL_MS from when it listens until the simulation ends, and how long each took; those
 * sent before the simulation started are the baseline.
 */
async function readsDuringSimulation(): Promise<SimulationReadFigures | undefined> {
  const child = await startChild<FirstStartReadyMessage>('first-start.ts');
  try {
    const { paths, accessToken } = child.ready;
    let simulating = false;
    let running = true;
    void nextMessage(child.process, 'simulating').then(
      () => {
        simulating = true;
      },
      () => undefined,
    );
    const simulated = nextMessage(child.process, 'simulated');
    const ended = simulated.finally(() => {
      running = false;
    });
    const before: number[] = [];
    const during: number[] = [];
    const refused: string[] = [];
    const reads: Promise<void>[] = [];
    for (let index = 0; running; index += 1) {
      const path = paths[index % paths.length] as string;
      const latencies = simulating ? during : before;
      const sent = performance.now();
      reads.push(
        fetch(`${child.base}${path}`, { headers: { authorization: `Bearer ${accessToken}` } }).then(
          async (response) => {
            await response.arrayBuffer();
            latencies.push(performance.now() - sent);
            if (response.status !== 200) refused.push(`${path} answered ${response.status}`);
          },
          (error: unknown) => void refused.push(`${path}: ${error instanceof Error ? error.message : String(error)}`),
        ),
      );
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS))]);
    }
    const { orders, simulationMs } = await simulated;
    await Promise.all(reads);
    if (refused.length > 0) {
      failures.push(`${SIMULATION_CASE}: ${refused.length} of ${before.length + during.length} reads failed, first ${refused[0]}`);
      return undefined;
    }
    const figures = { orders, simulationMs, before: latenciesOf(before), during: latenciesOf(during) };
    const met = figures.during.latencyP99 < SIMULATION_READ_TARGET_P99_MS;
    console.log(`  before it: ${describeLatencies(figures.before)}`);
    console.log(`  while ${orders} orders were simulated in ${(simulationMs / 1000).toFixed(1)} s: ${describeLatencies(figures.during)}`);
    console.log(`  p99 while simulating: target < ${SIMULATION_READ_TARGET_P99_MS} ms   ${met ? 'met' : 'MISSED'}`);
    return figures;
  } finally {
    await stopChild(child);
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const ratio = (numerator: number, denominator: number) => (denominator > 0 ? numerator / denominator : Number.NaN);
const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

interface Verdict {
  name: string;
  value: number;
  target: string;
  met: boolean;
}

function verdicts(byName: Map<string, Figures>): Verdict[] {
  const hello = byName.get('hello');
  const get = byName.get('products.get');
  const first = byName.get('products.list');
  const deep = byName.get('products.list (deep)');
  if (!hello || !get || !first || !deep) return [];
  const getRatio = ratio(get.requestsPerSecond, hello.requestsPerSecond);
  const listRatio = ratio(first.requestsPerSecond, hello.requestsPerSecond);
  const depthRatio = ratio(deep.latencyP99, first.latencyP99);
  return [
    { name: 'products.get / hello (req/s)', value: getRatio, target: '≥ 0.50', met: getRatio >= 0.5 },
    { name: 'products.list / hello (req/s)', value: listRatio, target: '≥ 0.33', met: listRatio >= 0.33 },
    { name: 'deep page p99 / first page p99', value: depthRatio, target: '≤ 1.20', met: depthRatio <= 1.2 },
  ];
}

const cpuMsPerRequest = (f: Figures) => (f.requestsPerSecond > 0 ? (1000 * f.serverCpu) / f.requestsPerSecond : Number.NaN);
const kernelMsPerRequest = (f: Figures) => (f.requestsPerSecond > 0 ? (1000 * f.serverSystemCpu) / f.requestsPerSecond : Number.NaN);
/** "0.450 (kernel 0.120, 2200 req/s)": a case's server CPU per request, the kernel's part, and its throughput. */
const cpuCell = (f: Figures) => `${fixed(cpuMsPerRequest(f), 3)} (kernel ${fixed(kernelMsPerRequest(f), 3)}, ${Math.round(f.requestsPerSecond)} req/s)`;

/** With BENCH_DATABASE_URL: each store API case's server CPU per request on SQLite and on PostgreSQL, and their ratio. */
function printDatabases(figures: Figures[]): void {
  const pairs = figures
    .filter((f) => f.database === 'PostgreSQL')
    .map((postgres) => ({ postgres, sqlite: figures.find((f) => f.database === 'SQLite' && f.name === postgres.name) }));
  if (pairs.length === 0) return;
  console.log(`SQLite and PostgreSQL, server CPU ms per request (goal for products.get and products.list: PostgreSQL at most ${POSTGRES_READ_GOAL} × SQLite):`);
  for (const { sqlite, postgres } of pairs) {
    const ratio = sqlite ? cpuMsPerRequest(postgres) / cpuMsPerRequest(sqlite) : Number.NaN;
    const goal = ['products.get', 'products.list'].includes(postgres.name) ? (ratio <= POSTGRES_READ_GOAL ? '  meets the goal' : '  above the goal') : '';
    console.log(`  ${postgres.name.padEnd(16)} SQLite ${sqlite ? cpuCell(sqlite) : 'n/a'}  PostgreSQL ${cpuCell(postgres)}  × ${fixed(ratio)}${goal}`);
  }
  console.log(
    SERVER_CPUS
      ? `  (the servers on CPUs ${SERVER_CPUS}; PostgreSQL's CPU, wherever it runs here, is in "others CPU"${RATE > 0 ? `; ${RATE} requests/s offered to each case` : ''})`
      : '  (PostgreSQL runs on the same CPUs as the servers and the load generator here: its own CPU is in "others CPU"; BENCH_SERVER_CPUS and BENCH_RATE keep them apart, docs/performance.md)',
  );
}

function printTable(figures: Figures[], checks: Verdict[]): void {
  const hello = figures.find((f) => f.name === 'hello');
  const rows = figures.map((f) => [
    f.database === 'PostgreSQL' ? `${f.label} [PostgreSQL]` : f.label,
    String(f.status),
    Math.round(f.requestsPerSecond).toString(),
    hello && f !== hello ? fixed(ratio(f.requestsPerSecond, hello.requestsPerSecond)) : '',
    fixed(f.latencyP50),
    fixed(f.latencyP99),
    `${Math.round(100 * f.serverCpu)} %`,
    f.requestsPerSecond > 0 ? fixed(cpuMsPerRequest(f), 3) : 'n/a',
    `${Math.round(100 * f.clientCpu)} %`,
    f.otherCpu === undefined ? 'n/a' : `${Math.round(100 * f.otherCpu)} %`,
    f.non2xx + f.errors > 0 ? `${f.non2xx} non-2xx, ${f.errors} errors` : '',
  ]);
  const header = ['case', 'status', 'req/s', '÷ hello', 'p50 ms', 'p99 ms', 'server CPU', 'server CPU ms/req', 'client CPU', 'others CPU', 'problems'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === 0 || column === header.length - 1 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ');
  console.log();
  console.log(line(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const row of rows) console.log(line(row));
  console.log();
  console.log("÷ hello: the case's req/s over the bare Express route's. CPU: time used over the run, 100 % = one core busy throughout");
  console.log("(ms/req: the server's CPU time per request);");
  console.log('"others": the other processes of the machine (noise).');
  // PostgreSQL's own processes are among the others on this machine: only the SQLite pass can tell noise.
  const disturbed = figures.filter((f) => f.database !== 'PostgreSQL' && (f.otherCpu ?? 0) > 0.1).map((f) => f.name);
  if (disturbed.length > 0) console.warn(`! other processes used the CPUs during ${disturbed.join(', ')}: run again on a quiet machine`);
  console.log();
  for (const check of checks)
    console.log(`${check.name.padEnd(34)} ${fixed(check.value).padStart(6)}   target ${check.target}   ${check.met ? 'met' : 'MISSED'}`);
}

// ---------------------------------------------------------------------------------------------

/** The server processes of the request cases, stopped at the end whatever happened. */
interface ServerChildren {
  hello?: Child<ReadyMessage>;
  api?: Child<StoreReadyMessage>;
}

/** The request cases' names: the servers are started only when one of them is asked for. */
const SERVER_CASES = [
  'hello',
  'products.get',
  'products.get (unread)',
  'products.list',
  'products.list (deep)',
  'orders.list',
  'analytics.overview',
  'analytics.overview (new ranges)',
];

const wanted = (name: string) => !CASES || CASES.has(name);

/** The request cases under load: the bare Express app, then the store API over its bench store. */
async function measureServers(
  children: ServerChildren,
  database: StoreDatabase,
): Promise<{ figures: Figures[]; seedMs: number; simulationMs: number | undefined }> {
  const hello = children.hello ?? (await startChild('hello.ts'));
  children.hello = hello;
  const orderCount = database.postgresUrl ? POSTGRES_ORDERS : SQLITE_ORDERS;
  console.log(`Store: ${PRODUCTS} products and ${orderCount} simulated orders on ${database.name} …`);
  const api = await startChild<StoreReadyMessage>('server.ts', {
    BENCH_PRODUCTS: String(PRODUCTS),
    BENCH_ORDERS: String(orderCount),
    BENCH_DATABASE_URL: database.postgresUrl ?? '',
  });
  children.api = api;
  const { storeId, productIds, orders } = api.ready;
  const simulated = orders ? `, ${orders.count} orders simulated in ${(orders.simulationMs / 1000).toFixed(0)} s` : '';
  console.log(
    `${api.ready.built ? 'Built' : 'Kept from an earlier run'}: products seeded in ${(api.ready.seedMs / 1000).toFixed(1)} s (ids ${productIds.first}–${productIds.last})${simulated}; store ${storeId}`,
  );

  let accessToken = api.ready.accessToken;
  const auth = () => ({ authorization: `Bearer ${accessToken}` });
  const refresh = async (server: Child<StoreReadyMessage>) => {
    const answered = nextMessage(server.process, 'token');
    tell(server.process, { type: 'token' });
    accessToken = (await answered).accessToken;
  };

  // products.get over 1,000 ids spread over the whole store (not one hot row).
  const span = productIds.last - productIds.first + 1;
  const ids = spreadProductIds(productIds);
  let next = 0;
  const products = `/stores/${storeId}/v1/products`;
  const figures: Figures[] = [];
  const server = api;
  /** Measures a case with a token fresh from the server (a run may outlast the previous one). */
  const run = async (benchCase: Omit<Case, 'headers'> & { authenticated: boolean }) => {
    if (benchCase.name === 'hello' && !database.first) return;
    if (benchCase.authenticated) await refresh(server);
    const tagged = benchCase.name === 'hello' ? {} : { database: database.name };
    const measured = await measure({ ...benchCase, ...tagged, headers: benchCase.authenticated ? auth() : {} });
    if (measured) figures.push({ ...measured, ...tagged });
  };

  await run({ name: 'hello', label: 'bare Express GET /hello', server: hello, nextPath: () => '/hello', authenticated: false });
  await run({ name: 'products.get', label: 'GET /products/{id}', server, nextPath: () => `${products}/${ids[next++ % ids.length]}`, authenticated: true });
  // Informational: every request a product not read before, so none is answered from the
  // reader's kept results (the token still is): the cost of a product read that goes to SQLite.
  let unread = 0;
  const nextUnread = () => `${products}/${productIds.first + (unread++ % span)}`;
  await run({ name: 'products.get (unread)', label: 'GET /products/{id}, each id once', server, nextPath: nextUnread, authenticated: true });
  await run({
    name: 'products.list',
    label: `GET /products?limit=${PAGE_LIMIT} (first page)`,
    server,
    nextPath: () => `${products}?limit=${PAGE_LIMIT}`,
    authenticated: true,
  });

  if (!CASES || CASES.has('products.list (deep)')) {
    await refresh(server);
    const targetId = productIds.first + Math.floor(span * DEEP_FRACTION);
    try {
      const walkStart = performance.now();
      const deep = await deepCursor(server.base, storeId, auth(), targetId);
      console.log(
        `  deep cursor: after id ${deep.afterId}, ${deep.pages} pages of ${WALK_LIMIT} walked in ${((performance.now() - walkStart) / 1000).toFixed(1)} s`,
      );
      const query = new URLSearchParams({ limit: String(PAGE_LIMIT), cursor: deep.cursor }).toString();
      await run({
        name: 'products.list (deep)',
        label: `GET /products?limit=${PAGE_LIMIT} after id ${deep.afterId}`,
        server,
        nextPath: () => `${products}?${query}`,
        authenticated: true,
      });
    } catch (error) {
      console.warn(`  ! no deep page: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  if (orders) {
    await run({
      name: 'orders.list',
      label: `GET /orders?limit=${PAGE_LIMIT} (of ${orders.count})`,
      server,
      nextPath: () => `/stores/${storeId}/v1/orders?limit=${PAGE_LIMIT}`,
      authenticated: true,
    });
    // The simulated days, as dates of the store's time zone: the first, and the last (`to` is the midnight after it).
    const range = new URLSearchParams({ from: riyadhDay(orders.from), to: riyadhDay(orders.to - 1) }).toString();
    await run({
      name: 'analytics.overview',
      label: `GET /analytics/overview?${range}`,
      server,
      nextPath: () => `/stores/${storeId}/v1/analytics/overview?${range}`,
      authenticated: true,
    });
    // Informational: every request a range not asked before, so no answer is a kept one (the
    // overview is kept per range until an order changes the rollups): the longest ranges first,
    // 1,035 of them of 46 to 90 days, then shorter ones.
    const DAY_MS = 86_400_000;
    const shifts = Array.from({ length: 45 * 45 }, (_, index) => ({ first: index % 45, last: Math.floor(index / 45) })).sort(
      (a, b) => a.first + a.last - (b.first + b.last),
    );
    let shift = 0;
    const nextRange = () => {
      const { first, last } = shifts[shift++ % shifts.length] as { first: number; last: number };
      const query = new URLSearchParams({ from: riyadhDay(orders.from + first * DAY_MS), to: riyadhDay(orders.to - 1 - last * DAY_MS) }).toString();
      return `/stores/${storeId}/v1/analytics/overview?${query}`;
    };
    await run({
      name: 'analytics.overview (new ranges)',
      label: 'GET /analytics/overview, each range once',
      server,
      nextPath: nextRange,
      authenticated: true,
    });
  }
  return { figures, seedMs: api.ready.seedMs, simulationMs: orders?.simulationMs };
}

/** The built server's start time and idle memory (tools/bench/start-time.ts); needs `pnpm build` first. */
const START_CASE = 'start';

async function main(): Promise<void> {
  if (PROFILE_DIR) fs.mkdirSync(PROFILE_DIR, { recursive: true });
  console.log(
    `Bench: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up + ${SECONDS} s per case`,
  );
  const [load1] = os.loadavg();
  if ((load1 ?? 0) > 0.5) console.warn(`  ! load average ${load1?.toFixed(2)}: other processes are using the CPUs, the figures will be low and noisy`);
  const children: ServerChildren = {};
  let webhookFigures: WebhookFigures[] = [];
  let simulationReads: SimulationReadFigures | undefined;
  const start: StartFigures[] = [];
  try {
    const passes = [];
    for (const database of SERVER_CASES.some(wanted) ? STORE_DATABASES : []) {
      passes.push(await measureServers(children, database));
      await stopChild(children.api);
      children.api = undefined;
    }
    const [servers] = passes;
    const figures = passes.flatMap((pass) => pass.figures);
    const checks = verdicts(new Map(figures.filter((f) => f.database !== 'PostgreSQL').map((f) => [f.name, f])));
    if (servers) printTable(figures, checks);
    printDatabases(figures);
    if (wanted(SIMULATION_CASE)) {
      console.log('\nReads during the first-start simulation (SQLite, the demo store, one server process):');
      simulationReads = await readsDuringSimulation();
    }
    if (wanted(START_CASE)) {
      console.log('\nStart to ready (node packages/server/dist/main.js, SQLite; goals: under 2000 ms, under 150 MB):');
      for (const mode of ['production', 'development'] as const) {
        const figures = await measureStart(mode);
        start.push(figures);
        console.log(`  ${describeStart(figures)}`);
      }
    }
    const webhookCases = ['webhooks.deliveries', 'webhooks.recovery', 'webhooks.outbox lag'].filter((name) => !CASES || CASES.has(name));
    if (webhookCases.length > 0) {
      console.log(`\nWebhooks: one dispatcher on ${POSTGRES_URL ? 'PostgreSQL' : 'SQLite'}, a receiver in its own process:`);
      webhookFigures = await benchWebhooks({
        deliveries: WEBHOOK_DELIVERIES,
        burst: WEBHOOK_BURST,
        recovery: WEBHOOK_RECOVERY,
        wanted: (name) => webhookCases.includes(name),
        databaseUrl: POSTGRES_URL,
      });
    }
    if (PROFILE_DIR)
      console.log(`\nCPU profiles of the servers over each measured run: ${PROFILE_DIR} (open in Chrome DevTools or: tsx tools/bench/profile.ts <file>)`);
    if (JSON_FILE) {
      const machine = {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model,
        node: process.version,
        platform: `${os.type()} ${os.release()}`,
        memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      };
      const settings = {
        seconds: SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        connections: CONNECTIONS,
        products: PRODUCTS,
        orders: SQLITE_ORDERS,
        ...(POSTGRES_URL ? { postgresOrders: POSTGRES_ORDERS } : {}),
        seedMs: servers ? Math.round(servers.seedMs) : undefined,
        simulationMs: servers?.simulationMs === undefined ? undefined : Math.round(servers.simulationMs),
      };
      fs.writeFileSync(
        JSON_FILE,
        `${JSON.stringify({ at: new Date().toISOString(), machine, settings, figures, checks, failures, webhooks: webhookFigures, simulationReads, start }, null, 2)}\n`,
      );
      console.log(`Figures written to ${JSON_FILE}`);
    }
    if (failures.length > 0) {
      console.error(`\n! ${failures.length} case(s) did not answer 200 and have no figure:`);
      for (const failure of failures) console.error(`  ${failure}`);
      process.exitCode = 1;
    }
  } finally {
    await Promise.all([stopChild(children.hello), stopChild(children.api)]);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
