import type { Knex } from 'knex';
import { createApp } from './app';
import { systemClock } from './core/clock';
import { type Config, metricsUrl } from './core/config';
import { waitForDatabase } from './db/availability';
import { createDatabase, describeDatabase } from './db/connection';
import { holdLeadership } from './db/dialect';
import { migrateToLatest } from './db/migrate';
import { bufferedOutput, createLogger, type Logger } from './http/request-log';
import { runHousekeeping, scheduleHousekeeping } from './jobs/housekeeping';
import { createDispatcher } from './jobs/webhook-dispatcher';
import { installDirectly } from './oauth/direct-install';
import type { TokenResponse } from './oauth/token-endpoint';
import { announceListening, isClusterWorker, joinCluster, runPrimary } from './runtime/cluster';
import { listen } from './runtime/http-server';
import type { MetricsListening } from './runtime/metrics';
import { claimDataDirectory } from './runtime/one-writer';
import { handleShutdown, pause, type Shutdown } from './runtime/shutdown';
import { DEMO_ACTIVITY, DEMO_OWNER, type DemoSeed, seedDemo, simulateDemoActivity } from './seeds/demo';
import { type Services, servicesFromConfig } from './services/container';
import { verifySealingKey } from './services/sealing-key';

/** Beyond the stop's delay and drain, the time left for dispatchers, the pool and the logs: the defaults (5 + 20 + 4 s) end inside the usual 30 s grace period. */
const STOP_MARGIN_MS = 4_000;

/**
 * What the start says. In production every line is a JSON log line on stdout (a collector reads
 * one format); elsewhere a person reads the banner as plain lines.
 */
type Say = (line: string, fields?: Record<string, unknown>) => void;

function sayerOf(config: Config, logger: Logger): Say {
  // A server process of a cluster logs: the banner is the primary's.
  if (config.environment === 'production' || isClusterWorker()) return (line, fields) => logger.info(fields ?? {}, line.replace(/\s+/g, ' ').trim());
  return (line) => console.log(line);
}

/** The banner's lines: where each part of the service answers. */
function announce(say: Say, config: Config, port: number): void {
  const base = `http://localhost:${port}`;
  const processes = config.webConcurrency > 1 ? `, ${config.webConcurrency} processes` : '';
  say(`Store API  ${base}/stores/{storeId}/v1   (${describeDatabase(config)}${processes})`, {
    port,
    database: describeDatabase(config),
    processes: config.webConcurrency,
  });
  say(`OAuth      ${base}/oauth/authorize`);
  say(`API docs   ${base}/docs`);
  say(`OpenAPI    ${base}/openapi.json`);
  say(`Dashboard  ${base}/dashboard`);
  say(`Probes     ${base}/livez  ${base}/readyz`);
}

function sayMetrics(say: Say, metrics: NonNullable<Config['metrics']>, port: number): void {
  say(`Metrics    ${metricsUrl(metrics, port)}`, { metrics_port: port, metrics_host: metrics.host });
}

/** What runtime/tracing started, when OTEL_EXPORTER_OTLP_ENDPOINT asked: flushed and stopped last but the logs. */
export interface StartedTracing {
  shutdown(): Promise<void>;
}

/**
 * The server's start, after main.ts has read the settings and, when asked, started OpenTelemetry
 * (whose instrumentation must be in place before Express, pg and Knex are loaded: this module
 * loads them).
 */
export async function startServer(config: Config, tracing?: StartedTracing): Promise<void> {
  // A person at a terminal reads pretty lines; a collector reading a pipe or file gets JSON written in the background.
  const logger = createLogger({ level: config.logLevel, environment: config.environment }, process.stdout.isTTY ? process.stdout : bufferedOutput(1));
  const say = sayerOf(config, logger);
  const deadlineMs = config.shutdown.delayMs + config.shutdown.timeoutMs + STOP_MARGIN_MS;
  const log = {
    info: (message: string) => logger.info(message),
    error: (message: string, error?: unknown) => logger.error(error === undefined ? {} : { err: error }, message),
  };
  if (config.webConcurrency > 1 && !isClusterWorker()) {
    // The primary's stop outlasts its processes' own deadline.
    const primary = runPrimary({
      processes: config.webConcurrency,
      deadlineMs: deadlineMs + STOP_MARGIN_MS,
      log,
      onListening: (port) => announce(say, config, port),
    });
    if (config.metrics) {
      const metricsListening = await (await import('./runtime/metrics.js')).serveClusterMetrics(config.metrics);
      primary.onStop(() => metricsListening.close());
      sayMetrics(say, config.metrics, metricsListening.port);
    }
    return;
  }
  const shutdown = handleShutdown({ deadlineMs, log });
  joinCluster(shutdown);
  // SQLite: one server process per data directory; a second one stops here (runtime/one-writer.ts).
  const claim = config.databaseUrl ? undefined : claimDataDirectory(config.dataDir);
  const database = createDatabase(config, {
    log: { warn: (message) => logger.warn({ source: 'knex' }, message), debug: (message) => logger.debug({ source: 'knex' }, message) },
  });
  // The stop's steps, in order: serving ends (once there is a server), then the metrics listener
  // (scraped until the API has drained), the pool, the traces still buffered, then the logs.
  let stopServing = async (): Promise<void> => undefined;
  let metricsListening: MetricsListening | undefined;
  shutdown.onStop(() => stopServing());
  shutdown.onStop(() => metricsListening?.close());
  shutdown.onStop(() => database.destroy());
  shutdown.onStop(() => claim?.release());
  shutdown.onStop(() => tracing?.shutdown());
  shutdown.onStop(() => new Promise<void>((resolve) => logger.flush(() => resolve())));
  try {
    await prepareDatabase(config, database, logger, say, shutdown);
  } catch (error) {
    await database.destroy();
    throw error;
  }
  // Metrics are kept only when METRICS_PORT asks, and prom-client is loaded only then (its CPU metric
  // loads OpenTelemetry's API package for exemplars); their listener opens once the API's has.
  const prometheus = config.metrics ? await import('./runtime/metrics.js') : undefined;
  const metrics = prometheus?.createMetrics();
  metrics?.watchDatabase(database, systemClock);
  const services = servicesFromConfig(config, database, metrics);
  await verifySealingKey(services);
  const demo = config.seedDemo ? await seedDemoStore(services) : undefined;
  const app = createApp({ config, services, logger });
  const listening = await listen(app, config.port, config.shutdown.timeoutMs);
  const base = `http://localhost:${listening.port}`;
  if (isClusterWorker()) {
    logger.info({ port: listening.port }, `Server process ${process.pid} listening`);
    announceListening(listening.port);
  } else announce(say, config, listening.port);
  if (prometheus && metrics && config.metrics) {
    // In a cluster the primary listens on METRICS_PORT and reads every process's registry.
    if (isClusterWorker()) prometheus.joinClusterMetrics(metrics);
    else {
      metricsListening = await prometheus.serveMetrics(metrics, config.metrics);
      sayMetrics(say, config.metrics, metricsListening.port);
    }
  }
  if (tracing) say(`Tracing    OTLP/HTTP to ${config.tracing?.endpoint ?? ''}`);
  if (demo) {
    printDemo(base, demo);
    void simulateDemo(services, base, demo, shutdown.signal);
  }
  // One process among every instance on the database runs housekeeping: the leader (db/dialect.ts).
  const leadership = holdLeadership(
    database,
    // On SQLite the one process leads: nothing to say.
    config.databaseUrl
      ? { onChange: (held) => logger.info(held ? `Housekeeping leader: process ${process.pid}` : `Housekeeping leader no more: process ${process.pid}`) }
      : {},
  );
  const housekeeping = scheduleHousekeeping(() => runHousekeeping(services), {
    leader: leadership,
    log: (message) => logger.info(message),
    logError: (message) => logger.error(message),
  });
  const dispatchers = Array.from({ length: config.webhooks.workers }, () =>
    createDispatcher(services, { logError: (message) => logger.error(message), metrics: services.metrics }),
  );
  for (const dispatcher of dispatchers) dispatcher.start();

  stopServing = async () => {
    services.readiness.drain();
    // Background work stops claiming at once and finishes beside the HTTP drain (its attempts end within 15 s).
    const background = Promise.all([housekeeping.stop().then(() => leadership.stop()), ...dispatchers.map((dispatcher) => dispatcher.stop())]);
    await pause(config.shutdown.delayMs);
    await listening.terminate();
    await background;
  };
}

/** Waits for the database (a compose or Kubernetes start often comes first), then migrates unless a release job does. */
async function prepareDatabase(config: Config, database: Knex, logger: Logger, say: Say, shutdown: Shutdown): Promise<void> {
  await waitForDatabase(database, {
    timeoutMs: config.database.connectTimeoutMs,
    log: (message) => logger.warn(message),
    named: config.databaseUrl ? `DATABASE_URL (${describeDatabase(config)})` : describeDatabase(config),
    signal: shutdown.signal,
  });
  if (!config.database.migrateOnStart) return;
  const applied = await migrateToLatest(database);
  if (applied.length > 0) say(`Database   migrated: ${applied.join(', ')}`, { migrations: applied });
}

/** The demo app is installed at first start with these, so the catalog and the simulated activity can be read at once. */
const DEMO_SCOPES = [
  'products:read',
  'categories:read',
  'inventory:read',
  'orders:read',
  'payments:read',
  'carts:read',
  'coupons:read',
  'reviews:read',
  'analytics:read',
];

interface DemoStart extends DemoSeed {
  readonly tokens: TokenResponse;
}

/** Only when SEED_DEMO asks (never in production): on an empty database, the demo store, owner and app, installed. */
async function seedDemoStore(services: Services): Promise<DemoStart | undefined> {
  const demo = await seedDemo(services);
  if (!demo) return undefined;
  const tokens = await installDirectly(services, {
    storeId: demo.store.id,
    appId: demo.app.id,
    scopes: DEMO_SCOPES,
    redirectUri: demo.version.redirectUrls[0] as string,
  });
  return { ...demo, tokens };
}

/** Printed once, by the start that seeded the demo: the secret and tokens are not kept anywhere in clear. */
function printDemo(base: string, demo: DemoStart): void {
  console.log(`Demo store ${demo.store.id}  ${demo.catalog.products} products  owner ${DEMO_OWNER.email} / ${DEMO_OWNER.password}`);
  console.log(`Demo app   client_id ${demo.app.id}  client_secret ${demo.clientSecret}  (shown once)`);
  console.log(`Try it     curl -H 'Authorization: Bearer ${demo.tokens.access_token}' '${base}/stores/${demo.store.id}/v1/products?limit=3'`);
  console.log(`           (valid ${demo.tokens.expires_in} s; later: node packages/server/dist/svc.js installation create ${demo.app.id} ${demo.store.id})`);
}

/**
 * The demo store's history, simulated once, at the start that created the store. It runs after the
 * server listens, in short batches between which requests are answered, and ends between two
 * batches when the process stops.
 */
async function simulateDemo(services: Services, base: string, demo: DemoStart, signal: AbortSignal): Promise<void> {
  const { days, orders } = DEMO_ACTIVITY;
  console.log(`Demo       simulating ${orders} orders over the last ${days} days of the demo store (the API answers meanwhile) …`);
  const started = performance.now();
  try {
    const summary = await simulateDemoActivity(services, demo.store.id, { signal });
    if (signal.aborted) return;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `Demo       ${summary.orders} orders (${summary.paid} paid, ${summary.refunded} refunded, ${summary.cancelled} cancelled), ${summary.carts} carts, ${summary.reviews} reviews in ${seconds} s`,
    );
    console.log(`Orders     curl -H 'Authorization: Bearer ${demo.tokens.access_token}' '${base}/stores/${demo.store.id}/v1/orders?limit=3'`);
  } catch (error) {
    if (!signal.aborted) console.error(`Demo       the simulation stopped: ${error instanceof Error ? error.message : String(error)}`);
  }
}
