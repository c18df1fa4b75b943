import fs from 'node:fs';
import path from 'node:path';
import { riyadhDay } from '../../packages/server/src/domain/storefront/pricing';
import { drive, firstAnswer, measuredRun, type Requests } from './load-driver';
import type { ReadyMessage, StoreReadyMessage } from './protocol';
import { type CaseFigures, machineSummary, printCases, printDatabases, runScript, verdicts, warnIfBusy, writeFigures } from './report';
import { type BenchScriptServer, keepClientOffServerCpus, startServer } from './servers';
import { runSettings } from './settings';
import { readsDuringSimulation, type SimulationReadFigures } from './simulation-reads';
import { measureStarts, type StartFigures } from './start-time';
import { PAGE_LIMIT, productPaths, spreadProductIds } from './store-requests';
import { benchWebhooks, WEBHOOK_CASES, type WebhookFigures } from './webhooks';

/**
 * `pnpm bench`: the store API's read path against a bare Express app, on this machine.
 *
 * Two server processes (the real server over SQLite with a store of BENCH_PRODUCTS products, and a
 * bare Express 5 app), the load generator here in the parent (tools/bench/load-driver.ts): on two
 * cores, each server gets one and the client the other. Every case is warmed up first, then
 * measured. The bench reports the figures and its targets without asserting them; it exits 1 when
 * it cannot run, or when a case does not answer 200 (that case gets no figure: an error's speed
 * means nothing).
 *
 * Its settings (tools/bench/settings.ts, docs/performance.md): BENCH_SECONDS (10) per measured run,
 * BENCH_WARMUP_SECONDS (3), BENCH_CONNECTIONS (10), BENCH_RATE (requests per second arriving evenly
 * at each case, to compare servers at the same load; unset, each case runs as fast as its server
 * answers), BENCH_SERVER_CPUS (the servers on these CPUs, the load generator on the others),
 * BENCH_PRODUCTS (100000), BENCH_ORDERS (100000, simulated over 90 days; the store is built once and
 * kept under BENCH_DATA_DIR, `data/bench`), BENCH_PROFILE=<dir> (CPU profiles of the servers over
 * each measured run), BENCH_CASES=hello,products.get,… (only these; the servers and their store are
 * started only for their cases), BENCH_JSON=<file> (the figures as JSON), BENCH_METRICS=1 (the store
 * API's server keeps Prometheus metrics, as with METRICS_PORT), BENCH_DATABASE_URL (the store API's
 * cases run on SQLite and then again on PostgreSQL, in schemas made and dropped by the run, and a
 * table sets their server CPU per request side by side; the PostgreSQL store has BENCH_ORDERS
 * orders, 0 unless given; the webhook cases run on PostgreSQL), BENCH_WEBHOOK_DELIVERIES and
 * BENCH_WEBHOOK_BURST (10000 each) and BENCH_WEBHOOK_RECOVERY (7000; tools/bench/webhooks.ts).
 *
 * After the request cases: `reads during simulation` (tools/bench/simulation-reads.ts), `start`
 * (the built server's start, tools/bench/start-time.ts) and the webhook cases.
 */

/** The request cases, in the order they run: the servers are started only when one of them is asked for. */
const SERVER_CASES = [
  'hello',
  'products.get',
  'products.get (unread)',
  'products.list',
  'products.list (deep)',
  'orders.list',
  'analytics.overview',
  'analytics.overview (new ranges)',
] as const;
const SIMULATION_CASE = 'reads during simulation';
/** The built server's start time and idle memory; needs `pnpm build` first. */
const START_CASE = 'start';
const CASES = [...SERVER_CASES, SIMULATION_CASE, START_CASE, ...WEBHOOK_CASES] as const;
type CaseName = (typeof CASES)[number];

/** The deep page starts after ~90 % of the store's products (id ~90,000 of 100,000). */
const DEEP_FRACTION = 0.9;
const WALK_LIMIT = 100;

type Settings = ReturnType<typeof runSettings<CaseName>>;

/** The run's settings, and the cases that did not answer 200 (they get no figure, and the bench exits 1). */
interface Bench {
  readonly settings: Settings;
  readonly wanted: (name: CaseName) => boolean;
  readonly failures: string[];
}

/** Where a pass of the store API's cases keeps its store: SQLite always, PostgreSQL beside it when BENCH_DATABASE_URL is set. */
interface StoreDatabase {
  readonly name: 'SQLite' | 'PostgreSQL';
  readonly postgresUrl?: string;
  readonly orders: number;
  /** The first pass also measures the bare Express app. */
  readonly first: boolean;
}

interface Case {
  readonly name: CaseName;
  readonly label: string;
  readonly server: BenchScriptServer<ReadyMessage>;
  readonly requests: Requests;
  /** The store API's database, when the cases run on both (its profiles are told apart by it). */
  readonly database?: string;
}

/** Warms a case up, then measures it: its figures, or none when it does not answer 200. */
async function measure(bench: Bench, benchCase: Case): Promise<CaseFigures | undefined> {
  const { settings } = bench;
  const answer = await firstAnswer(benchCase.requests);
  if (answer.status !== 200) {
    bench.failures.push(`${benchCase.name} answers ${answer.status}: ${answer.body.slice(0, 200)}`);
    console.error(`  ! ${benchCase.name} answers ${answer.status}, not 200: not measured`);
    return undefined;
  }
  const load = { connections: settings.connections, rate: settings.rate };
  process.stdout.write(`  ${benchCase.name.padEnd(22)} warm-up ${settings.warmupSeconds} s, `);
  await drive(benchCase.requests, { ...load, seconds: settings.warmupSeconds });
  process.stdout.write(`measure ${settings.seconds} s … `);
  const { server } = benchCase;
  const profile = settings.profileDir && path.join(settings.profileDir, `${benchCase.name}${benchCase.database ? `.${benchCase.database}` : ''}.cpuprofile`);
  if (profile) server.tell({ type: 'profile-start' });
  const run = await measuredRun(server, benchCase.requests, { ...load, seconds: settings.seconds });
  if (profile) await server.ask({ type: 'profile-stop', file: profile }, 'profiled');
  const figures: CaseFigures = {
    name: benchCase.name,
    label: benchCase.label,
    status: answer.status,
    requestsPerSecond: run.load.requests.average,
    latencyP50: run.load.latency.p50,
    latencyP99: run.load.latency.p99,
    requests: run.load.requests.total,
    non2xx: run.load.non2xx,
    errors: run.load.errors,
    serverCpu: run.server.total / run.elapsed,
    serverSystemCpu: run.server.system / run.elapsed,
    clientCpu: run.client / run.elapsed,
    otherCpu: run.otherCpu,
    profile,
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

/** The request cases' servers, stopped at the end whatever happened. */
interface Servers {
  hello?: BenchScriptServer<ReadyMessage>;
  api?: BenchScriptServer<StoreReadyMessage>;
}

/** The request cases under load: the bare Express app, then the store API over its bench store. */
async function measureServers(
  bench: Bench,
  servers: Servers,
  database: StoreDatabase,
): Promise<{ figures: CaseFigures[]; seedMs: number; simulationMs: number | undefined }> {
  const { settings } = bench;
  const hello = servers.hello ?? (await startServer({ script: 'hello.ts' }));
  servers.hello = hello;
  console.log(`Store: ${settings.products} products and ${database.orders} simulated orders on ${database.name} …`);
  const api = await startServer<StoreReadyMessage>({
    script: 'server.ts',
    env: { BENCH_PRODUCTS: String(settings.products), BENCH_ORDERS: String(database.orders), BENCH_DATABASE_URL: database.postgresUrl ?? '' },
  });
  servers.api = api;
  const { storeId, productIds, orders } = api.ready;
  const simulated = orders ? `, ${orders.count} orders simulated in ${(orders.simulationMs / 1000).toFixed(0)} s` : '';
  console.log(
    `${api.ready.built ? 'Built' : 'Kept from an earlier run'}: products seeded in ${(api.ready.seedMs / 1000).toFixed(1)} s (ids ${productIds.first}–${productIds.last})${simulated}; store ${storeId}`,
  );

  // Tokens live 900 s: each case asks for a fresh one (a run may outlast the previous one).
  let accessToken = api.ready.accessToken;
  const auth = () => ({ authorization: `Bearer ${accessToken}` });
  const refresh = async () => {
    accessToken = (await api.ask({ type: 'token' }, 'token')).accessToken;
  };

  const figures: CaseFigures[] = [];
  const run = async (name: CaseName, label: string, path: () => string) => {
    if (!bench.wanted(name) || (name === 'hello' && !database.first)) return;
    const server = name === 'hello' ? hello : api;
    if (server === api) await refresh();
    const tagged = server === api ? { database: database.name } : {};
    const measured = await measure(bench, { name, label, server, ...tagged, requests: { base: server.base, path, headers: server === api ? auth() : {} } });
    if (measured) figures.push({ ...measured, ...tagged });
  };

  await run('hello', 'bare Express GET /hello', () => '/hello');
  const products = `/stores/${storeId}/v1/products`;
  const reads = productPaths(storeId, spreadProductIds(productIds));
  await run('products.get', 'GET /products/{id}', reads.get);
  // Informational: every request a product not read before, so none is answered from the
  // reader's kept results (the token still is): the cost of a product read that goes to SQLite.
  const span = productIds.last - productIds.first + 1;
  let unread = 0;
  await run('products.get (unread)', 'GET /products/{id}, each id once', () => `${products}/${productIds.first + (unread++ % span)}`);
  await run('products.list', `GET /products?limit=${PAGE_LIMIT} (first page)`, reads.list);

  if (bench.wanted('products.list (deep)')) {
    await refresh();
    const targetId = productIds.first + Math.floor(span * DEEP_FRACTION);
    try {
      const walkStart = performance.now();
      const deep = await deepCursor(api.base, storeId, auth(), targetId);
      console.log(
        `  deep cursor: after id ${deep.afterId}, ${deep.pages} pages of ${WALK_LIMIT} walked in ${((performance.now() - walkStart) / 1000).toFixed(1)} s`,
      );
      const query = new URLSearchParams({ limit: String(PAGE_LIMIT), cursor: deep.cursor }).toString();
      await run('products.list (deep)', `GET /products?limit=${PAGE_LIMIT} after id ${deep.afterId}`, () => `${products}?${query}`);
    } catch (error) {
      console.warn(`  ! no deep page: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  if (orders) {
    await run('orders.list', `GET /orders?limit=${PAGE_LIMIT} (of ${orders.count})`, () => `/stores/${storeId}/v1/orders?limit=${PAGE_LIMIT}`);
    // The simulated days, as dates of the store's time zone: the first, and the last (`to` is the midnight after it).
    const range = new URLSearchParams({ from: riyadhDay(orders.from), to: riyadhDay(orders.to - 1) }).toString();
    await run('analytics.overview', `GET /analytics/overview?${range}`, () => `/stores/${storeId}/v1/analytics/overview?${range}`);
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
    await run('analytics.overview (new ranges)', 'GET /analytics/overview, each range once', nextRange);
  }
  return { figures, seedMs: api.ready.seedMs, simulationMs: orders?.simulationMs };
}

async function main(): Promise<void> {
  const settings = runSettings(CASES);
  keepClientOffServerCpus();
  const bench: Bench = { settings, wanted: (name) => !settings.cases || settings.cases.includes(name), failures: [] };
  const { postgresUrl } = settings;
  if (settings.profileDir) fs.mkdirSync(settings.profileDir, { recursive: true });
  console.log(`Bench: ${machineSummary()}, ${settings.connections} connections, ${settings.warmupSeconds} s warm-up + ${settings.seconds} s per case`);
  warnIfBusy();
  const databases: StoreDatabase[] = [
    { name: 'SQLite', orders: settings.orders.sqlite, first: true },
    ...(postgresUrl ? [{ name: 'PostgreSQL' as const, postgresUrl, orders: settings.orders.postgres, first: false }] : []),
  ];
  const servers: Servers = {};
  let webhooks: WebhookFigures[] = [];
  let simulationReads: SimulationReadFigures | undefined;
  let start: StartFigures[] = [];
  try {
    const passes = [];
    for (const database of SERVER_CASES.some(bench.wanted) ? databases : []) {
      passes.push(await measureServers(bench, servers, database));
      await servers.api?.stop();
      servers.api = undefined;
    }
    const [firstPass] = passes;
    const figures = passes.flatMap((pass) => pass.figures);
    const checks = verdicts(figures);
    if (firstPass) printCases(figures, checks);
    printDatabases(figures, settings);
    if (bench.wanted(SIMULATION_CASE)) {
      console.log('\nReads during the first-start simulation (SQLite, the demo store, one server process):');
      const reads = await readsDuringSimulation();
      if ('failure' in reads) bench.failures.push(reads.failure);
      else simulationReads = reads.figures;
    }
    if (bench.wanted(START_CASE)) {
      console.log('');
      start = await measureStarts();
    }
    const webhookCases = WEBHOOK_CASES.filter(bench.wanted);
    if (webhookCases.length > 0) {
      console.log(`\nWebhooks: one dispatcher on ${postgresUrl ? 'PostgreSQL' : 'SQLite'}, a receiver in its own process:`);
      webhooks = await benchWebhooks({ ...settings.webhooks, cases: webhookCases });
    }
    if (settings.profileDir)
      console.log(
        `\nCPU profiles of the servers over each measured run: ${settings.profileDir} (open in Chrome DevTools or: tsx tools/bench/profile.ts <file>)`,
      );
    if (settings.jsonFile) {
      const runSettings = {
        seconds: settings.seconds,
        warmupSeconds: settings.warmupSeconds,
        connections: settings.connections,
        products: settings.products,
        orders: settings.orders.sqlite,
        ...(postgresUrl ? { postgresOrders: settings.orders.postgres } : {}),
        seedMs: firstPass ? Math.round(firstPass.seedMs) : undefined,
        simulationMs: firstPass?.simulationMs === undefined ? undefined : Math.round(firstPass.simulationMs),
      };
      writeFigures(settings.jsonFile, { settings: runSettings, figures, checks, failures: bench.failures, webhooks, simulationReads, start });
    }
    if (bench.failures.length > 0) {
      console.error(`\n! ${bench.failures.length} case(s) did not answer 200 and have no figure:`);
      for (const failure of bench.failures) console.error(`  ${failure}`);
      process.exitCode = 1;
    }
  } finally {
    await Promise.all([servers.hello?.stop(), servers.api?.stop()]);
  }
}

runScript(main);
