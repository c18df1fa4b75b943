import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../../packages/server/src/app';
import { systemClock } from '../../packages/server/src/core/clock';
import { createDatabase } from '../../packages/server/src/db/connection';
import { engineOfHandle } from '../../packages/server/src/db/engine';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { migrations } from '../../packages/server/src/db/migrations';
import { bufferedOutput, createLogger } from '../../packages/server/src/http/request-log';
import { requestTokens } from '../../packages/server/src/oauth/token-endpoint';
import { createMetrics } from '../../packages/server/src/runtime/metrics';
import { seedCatalogForBench } from '../../packages/server/src/seeds/demo-catalog';
import { simulateStore } from '../../packages/server/src/seeds/simulation/run';
import { createServices } from '../../packages/server/src/services/container';
import { failStart, listen, portOf, serveBench, tellParent } from './child';
import { createBenchStore, installBenchApp, type Knex, scratchSchema } from './fixtures';
import type { BenchData } from './protocol';
import { storeServerSettings } from './settings';

/**
 * The real server, as production runs it (no response validation, internal errors hidden, a line
 * logged per request), on an SQLite file in a temporary directory holding one store of
 * BENCH_PRODUCTS products and BENCH_ORDERS orders simulated over 90 days (`svc simulate`), and an
 * installed app holding `products:read`, `orders:read` and `analytics:read`. Rate limits are raised
 * so that they never trigger. Run in its own process by tools/bench/run.ts.
 *
 * Simulating 100,000 orders takes many minutes, so the store is built once and kept under
 * BENCH_DATA_DIR (`data/bench`), keyed by its sizes, its seed and everything that shapes it (the
 * migrations, the seeds and the storefront's domain); each run copies it to the temporary directory.
 */
const UNLIMITED = 1_000_000_000;
const SCOPES = ['products:read', 'orders:read', 'analytics:read'];
const SIMULATION = { days: 90, seed: 1 };
const REPOSITORY = path.resolve(__dirname, '..', '..');
const SERVER_SOURCES = path.join(REPOSITORY, 'packages', 'server', 'src');
/** What the kept store is built by: a change to any of them builds it again. */
const SHAPING_SOURCES = ['seeds', path.join('domain', 'storefront'), path.join('domain', 'catalog', 'inventory')];

function sourcesOf(directory: string): string[] {
  return fs
    .readdirSync(directory, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => (entry.isDirectory() ? sourcesOf(path.join(directory, entry.name)) : [path.join(directory, entry.name)]));
}

/** The kept store's name: its sizes and seed, and a hash of the migrations and the code that builds it. */
function keptStoreName(products: number, orders: number): string {
  const hash = createHash('sha256');
  hash.update(migrations.map((migration) => migration.name).join(','));
  for (const file of SHAPING_SOURCES.flatMap((source) => sourcesOf(path.join(SERVER_SOURCES, source)))) hash.update(fs.readFileSync(file));
  return `store-p${products}-o${orders}-d${SIMULATION.days}-s${SIMULATION.seed}-${hash.digest('hex').slice(0, 12)}`;
}

/** Builds the store (catalog, then simulated orders) in a migrated database, and says what it holds. */
async function buildStore(db: Knex, products: number, orders: number): Promise<BenchData> {
  const deps = { db, engine: engineOfHandle(db), clock: systemClock };
  const { store, owner } = await createBenchStore(deps, 'Bench Store');
  let started = performance.now();
  await seedCatalogForBench(db, store.id, products);
  const seedMs = performance.now() - started;
  const bounds = await db('products').where({ store_id: store.id }).min({ first: 'id' }).max({ last: 'id' }).first();
  started = performance.now();
  let shown = 0;
  const summary =
    orders > 0
      ? await simulateStore(deps, {
          storeId: store.id,
          orders,
          ...SIMULATION,
          onProgress: (done, total) => {
            if (done < total && done - shown < total / 10) return;
            shown = done;
            console.log(
              `  simulated ${Math.floor((100 * done) / total)} % (${done} of ${total} steps) in ${((performance.now() - started) / 1000).toFixed(0)} s`,
            );
          },
        })
      : undefined;
  const simulationMs = performance.now() - started;
  return {
    storeId: store.id,
    ownerId: owner.id,
    productIds: { first: Number(bounds?.first), last: Number(bounds?.last) },
    seedMs,
    orders: summary ? { count: summary.orders, from: summary.from, to: summary.to, simulationMs } : undefined,
  };
}

/** Builds the store in an SQLite file of its own, checkpointed so that the file alone holds it. */
async function buildSqliteStore(dataDir: string, sqliteFile: string, products: number, orders: number): Promise<BenchData> {
  const db = createDatabase({ databaseUrl: undefined, dataDir }, { sqliteFile });
  try {
    await migrateToLatest(db);
    const data = await buildStore(db, products, orders);
    await db.raw('pragma wal_checkpoint(truncate)');
    return data;
  } finally {
    await db.destroy();
  }
}

/** The kept store for these sizes, built first if there is none: its SQLite file and what it holds. */
async function keptStore(
  products: number,
  orders: number,
  keptDir = path.join(REPOSITORY, 'data', 'bench'),
): Promise<{ file: string; data: BenchData; built: boolean }> {
  const name = keptStoreName(products, orders);
  const file = path.join(keptDir, `${name}.sqlite`);
  const about = path.join(keptDir, `${name}.json`);
  if (fs.existsSync(file) && fs.existsSync(about)) return { file, data: JSON.parse(fs.readFileSync(about, 'utf8')) as BenchData, built: false };
  fs.mkdirSync(keptDir, { recursive: true });
  console.log(`Building the bench store (${products} products, ${orders} orders over ${SIMULATION.days} days); kept as ${file}`);
  const buildDir = fs.mkdtempSync(path.join(keptDir, 'building-'));
  try {
    const data = await buildSqliteStore(buildDir, 'bench.sqlite', products, orders);
    fs.renameSync(path.join(buildDir, 'bench.sqlite'), file);
    fs.writeFileSync(about, `${JSON.stringify(data, null, 2)}\n`);
    return { file, data, built: true };
  } finally {
    fs.rmSync(buildDir, { recursive: true, force: true });
  }
}

interface BenchDatabase {
  readonly db: Knex;
  readonly data: BenchData;
  readonly built: boolean;
  /** Removes what the run made. The process exits right after: requests still queued for the database when the load stops must not meet a destroyed pool, so the pool is left to die with the process. */
  readonly close: () => Promise<void>;
}

/** SQLite: a copy of the kept store (built first if there is none) in a temporary directory. */
async function sqliteBenchDatabase(products: number, orders: number, keptDir: string | undefined): Promise<BenchDatabase> {
  const kept = await keptStore(products, orders, keptDir);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
  fs.copyFileSync(kept.file, path.join(dataDir, 'bench.sqlite'));
  const db = createDatabase({ databaseUrl: undefined, dataDir }, { sqliteFile: 'bench.sqlite' });
  await migrateToLatest(db);
  return { db, data: kept.data, built: kept.built, close: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
}

/**
 * PostgreSQL (BENCH_DATABASE_URL): the store built anew in a schema of its own, dropped at the end.
 * Nothing is kept between runs: the database is the operator's, and its state is theirs.
 */
async function postgresBenchDatabase(url: string, products: number, orders: number): Promise<BenchDatabase> {
  const { db, schema, drop } = await scratchSchema(url, 'svc_bench');
  try {
    await migrateToLatest(db);
    console.log(`Building the bench store (${products} products, ${orders} orders over ${SIMULATION.days} days) in PostgreSQL schema ${schema}`);
    const data = await buildStore(db, products, orders);
    return { db, data, built: true, close: drop };
  } catch (error) {
    await db.destroy().catch(() => undefined);
    await drop().catch(() => undefined);
    throw error;
  }
}

async function main(): Promise<void> {
  const settings = storeServerSettings();
  const { products, orders, postgresUrl } = settings;
  const { db, data, built, close } = postgresUrl
    ? await postgresBenchDatabase(postgresUrl, products, orders)
    : await sqliteBenchDatabase(products, orders, settings.keptDir);
  try {
    const metrics = settings.metrics ? createMetrics() : undefined;
    metrics?.watchDatabase({ db, engine: engineOfHandle(db), clock: systemClock });
    const services = createServices({
      db,
      engine: engineOfHandle(db),
      clock: systemClock,
      rateLimits: { perInstallation: UNLIMITED, perClient: UNLIMITED },
      ...(metrics ? { metrics } : {}),
    });
    const { storeId } = data;

    const installed = await installBenchApp(services, storeId, 'Bench App', SCOPES);
    let { tokens } = installed;

    // Each request's line is written as in production, to nowhere: its cost is part of what is measured.
    const logger = createLogger({ level: 'info', environment: 'production' }, bufferedOutput(os.devNull));
    const app = createApp({ config: { validateResponses: false, exposeInternalErrors: false }, services, logger });
    const server = await listen(app);
    serveBench(server, {
      close,
      newToken: async () => {
        tokens = await requestTokens(services, installed.appId, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
        return tokens.access_token;
      },
    });
    tellParent({ type: 'ready', port: portOf(server), accessToken: tokens.access_token, ...data, built });
  } catch (error) {
    await db.destroy().catch(() => undefined);
    await close();
    throw error;
  }
}

main().catch(failStart);
