import { createApp } from './app';
import { type Config, metricsUrl } from './core/config';
import { describeDatabase } from './db/connection';
import { LEADER_RETRY_MS } from './db/locks';
import { createDispatcher } from './delivery/dispatcher';
import { bufferedOutput, createLogger, type Logger } from './http/request-log';
import { runHousekeeping, scheduleHousekeeping } from './jobs/housekeeping';
import { announceListening, isClusterWorker, joinCluster, runPrimary } from './runtime/cluster';
import { listen } from './runtime/http-server';
import { assembleProcess, type ServiceProcess } from './runtime/process';
import { handleShutdown, pause } from './runtime/shutdown';
import { printDemo, seedDemoStore, simulateDemo } from './seeds/demo-start';
import { SWEEP_LIMITS } from './services/housekeeping';

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
  // The stop's steps, in order: serving ends (once there is a server), then the process (its metrics
  // listener, scraped until the API has drained, the pool, the data directory), the traces still
  // buffered, then the logs.
  let stopServing = async (): Promise<void> => undefined;
  let assembled: ServiceProcess | undefined;
  shutdown.onStop(() => stopServing());
  shutdown.onStop(() => assembled?.close());
  shutdown.onStop(() => tracing?.shutdown());
  shutdown.onStop(() => new Promise<void>((resolve) => logger.flush(() => resolve())));
  assembled = await assembleProcess('server', config, {
    databaseLog: { warn: (message) => logger.warn({ source: 'knex' }, message), debug: (message) => logger.debug({ source: 'knex' }, message) },
    log: {
      waiting: (message) => logger.warn(message),
      migrated: (names) => say(`Database   migrated: ${names.join(', ')}`, { migrations: names }),
    },
    signal: shutdown.signal,
  });
  const { database } = assembled;
  const services = await assembled.services();
  const app = createApp({ config, services, logger });
  const listening = await listen(app, config.port, config.shutdown.timeoutMs);
  const base = `http://localhost:${listening.port}`;
  // Seeded once the port is known (PORT=0 picks one): the demo app's redirect URLs name the docs console's address.
  const demo = config.seedDemo ? await seedDemoStore(services, [base, ...(/:0$/.test(config.publicUrl) ? [] : [config.publicUrl])]) : undefined;
  if (isClusterWorker()) {
    logger.info({ port: listening.port }, `Server process ${process.pid} listening`);
    announceListening(listening.port);
  } else announce(say, config, listening.port);
  // The metrics listener opens once the API's has.
  const metricsAt = await assembled.serveMetrics();
  if (metricsAt && config.metrics) sayMetrics(say, config.metrics, metricsAt.port);
  if (tracing) say(`Tracing    OTLP/HTTP to ${config.tracing?.endpoint ?? ''}`);
  if (demo) {
    printDemo(base, demo);
    void simulateDemo(services, base, demo, shutdown.signal);
  }
  // One process among every instance on the database runs housekeeping: the leader, on its own session (db/locks.ts).
  const leadership = services.engine.locks.holdLeadership(database, {
    retryMs: LEADER_RETRY_MS,
    // On SQLite the one process leads: nothing to say.
    ...(config.databaseUrl
      ? {
          onChange: (held: boolean) =>
            logger.info(held ? `Housekeeping leader: process ${process.pid}` : `Housekeeping leader no more: process ${process.pid}`),
        }
      : {}),
  });
  const housekeeping = scheduleHousekeeping(() => runHousekeeping(services, SWEEP_LIMITS, leadership), {
    leader: leadership,
    log: (message) => logger.info(message),
    logError: (message) => logger.error(message),
  });
  const dispatchers = Array.from({ length: config.webhooks.workers }, () =>
    createDispatcher(services, { logError: (message) => logger.error(message), logWarning: (message) => logger.warn(message), metrics: services.metrics }),
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
