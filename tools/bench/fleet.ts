import os from 'node:os';
import { systemClock } from '../../packages/server/src/core/clock';
import { createDatabase } from '../../packages/server/src/db/connection';
import { engineOfHandle } from '../../packages/server/src/db/engine';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { seedCatalogForBench } from '../../packages/server/src/seeds/demo-catalog';
import { createServices, TOOLS_KEY } from '../../packages/server/src/services/container';
import { freshPostgresDatabase } from '../testbed/postgres-database';
import { createBenchStore, installBenchApp } from './fixtures';
import { drive, firstAnswer, measuredRun, type Requests } from './load-driver';
import { type Column, machineSummary, printTable, runScript } from './report';
import { checkBuilt, type ServerUnderTest, startServer } from './servers';
import { fleetSettings } from './settings';
import { productPaths } from './store-requests';

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
 * Settings (tools/bench/settings.ts): BENCH_DATABASE_URL (required: a PostgreSQL URL whose user may
 * create databases; the run makes one and drops it), BENCH_FLEET_PROCESSES (`1,2,<cores>`),
 * BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (3), BENCH_CONNECTIONS (20), BENCH_PRODUCTS (10000),
 * BENCH_CASES (all three). Run `pnpm build` first: the bench starts the built server.
 */

const CASE_NAMES = ['products.get', 'products.list', 'inventory.adjust'] as const;
type CaseName = (typeof CASE_NAMES)[number];
const CORES = os.availableParallelism();
const SCOPES = ['products:read', 'inventory:read', 'inventory:write'];

interface Fixture {
  readonly token: string;
  readonly storeId: string;
  /** Physical products, whose stock can be adjusted. */
  readonly productIds: readonly number[];
}

/** The store, its catalog and an installed app, written before any server starts. */
async function buildFixture(url: string, products: number): Promise<Fixture> {
  const db = createDatabase({ databaseUrl: url, dataDir: '' });
  try {
    await migrateToLatest(db);
    const services = createServices({ db, engine: engineOfHandle(db), clock: systemClock, rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 } });
    const { store } = await createBenchStore(services, 'Fleet Store');
    await seedCatalogForBench(db, store.id, products);
    const { tokens } = await installBenchApp(services, store.id, 'Fleet Bench App', SCOPES);
    const physical = await db('products').where({ store_id: store.id, product_kind: 'physical' }).select('id').limit(5000);
    return { token: tokens.access_token, storeId: store.id, productIds: physical.map((row: { id: number }) => Number(row.id)) };
  } finally {
    await db.destroy();
  }
}

interface Case {
  readonly name: CaseName;
  readonly expected: number;
  readonly requests: (base: string) => Requests;
}

function casesOf(fixture: Fixture, names: readonly CaseName[]): Case[] {
  const reads = productPaths(fixture.storeId, fixture.productIds);
  const headers = { authorization: `Bearer ${fixture.token}`, 'content-type': 'application/json' };
  const all: Case[] = [
    { name: 'products.get', expected: 200, requests: (base) => ({ base, headers, path: reads.get }) },
    { name: 'products.list', expected: 200, requests: (base) => ({ base, headers, path: reads.list }) },
    {
      name: 'inventory.adjust',
      expected: 201,
      // The ids walked in turn, as products.get walks them.
      requests: (base) => ({
        base,
        headers,
        method: 'POST',
        path: () => `${reads.get()}/inventory-adjustments`,
        body: JSON.stringify({ delta: 1, reason: 'restock' }),
      }),
    },
  ];
  return all.filter((each) => names.includes(each.name));
}

interface Figures {
  readonly processes: number;
  readonly name: string;
  readonly requestsPerS: number;
  readonly cpuMsPerRequest: number;
  readonly p99Ms: number;
  readonly errors: number;
}

type Settings = ReturnType<typeof fleetSettings<CaseName>>;

async function measure(server: ServerUnderTest, benchCase: Case, processes: number, settings: Settings): Promise<Figures> {
  const requests = benchCase.requests(server.base);
  const check = await firstAnswer(requests);
  if (check.status !== benchCase.expected) throw new Error(`${benchCase.name} answers ${check.status}: ${check.body.slice(0, 200)}`);
  await drive(requests, { seconds: settings.warmupSeconds, connections: settings.connections });
  const { load, server: cpu } = await measuredRun(server, requests, { seconds: settings.seconds, connections: settings.connections });
  const answered = load.requests.total;
  return {
    processes,
    name: benchCase.name,
    requestsPerS: answered / settings.seconds,
    cpuMsPerRequest: answered > 0 ? cpu.total / 1000 / answered : Number.NaN,
    p99Ms: load.latency.p99,
    errors: load.non2xx + load.errors,
  };
}

const FLEET_COLUMNS: readonly Column[] = [
  { title: 'processes', align: 'right' },
  { title: 'case', align: 'left' },
  ...['req/s', 'server CPU ms/req', 'p99 ms', '× 1 process', 'gain per added process'].map((title) => ({ title, align: 'right' as const })),
];

/** Each case's figures with each count of processes, and how they scale from one process. */
function printScaling(figures: readonly Figures[], fewest: number | undefined): void {
  const orBlank = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : '');
  const rows = figures.map((row) => {
    const single = figures.find((each) => each.name === row.name && each.processes === fewest);
    const ratio = single && single.processes === 1 ? row.requestsPerS / single.requestsPerS : Number.NaN;
    const gain = row.processes > 1 && Number.isFinite(ratio) ? (ratio - 1) / (row.processes - 1) : Number.NaN;
    return [String(row.processes), row.name, row.requestsPerS.toFixed(0), row.cpuMsPerRequest.toFixed(3), row.p99Ms.toFixed(0), orBlank(ratio), orBlank(gain)];
  });
  printTable(FLEET_COLUMNS, rows);
}

async function main(): Promise<void> {
  const settings = fleetSettings(CASE_NAMES, CORES);
  checkBuilt();
  const [load1] = os.loadavg();
  console.log(
    `Fleet bench: ${machineSummary()}, processes ${settings.processes.join(', ')}, ${settings.connections} connections, ${settings.warmupSeconds} s warm-up + ${settings.seconds} s per case, load average ${load1?.toFixed(2)}`,
  );
  if (settings.processes.some((count) => count > CORES)) console.log(`  ! more processes than the ${CORES} cores: they share them`);
  const database = await freshPostgresDatabase(settings.databaseUrl);
  const figures: Figures[] = [];
  try {
    console.log(`Store: ${settings.products} products in a fresh database …`);
    const cases = casesOf(await buildFixture(database.url, settings.products), settings.cases);
    for (const processes of settings.processes) {
      const server = await startServer({
        built: {
          processes,
          env: {
            NODE_ENV: 'production',
            // Production needs its issuer; the bench's clients are on this machine.
            PUBLIC_URL: 'http://localhost',
            DATABASE_URL: database.url,
            SECRET_KEY: TOOLS_KEY.toString('hex'),
            RATE_LIMIT_PER_INSTALLATION: '1000000',
            SHUTDOWN_DELAY_MS: '0',
          },
        },
      });
      try {
        for (const benchCase of cases) {
          const measured = await measure(server, benchCase, processes, settings);
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
  printScaling(figures, settings.processes[0]);
  console.log('');
  console.log(
    `Target: a gain of at least 0.80 per added process, up to the ${CORES} cores. Load average ${load1?.toFixed(2)} before, ${loadAfter?.toFixed(2)} after:`,
  );
  console.log('the load generator and PostgreSQL share the machine with the server, so on few cores the figures show cost per request more than scaling.');
  if (figures.some((row) => row.errors > 0)) process.exitCode = 1;
}

runScript(main, 'bench:fleet could not run: ');
