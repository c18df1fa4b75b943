import type { Knex } from 'knex';
import { systemClock } from '../core/clock';
import { type Config, metricsUrl } from '../core/config';
import { waitForDatabase } from '../db/availability';
import { claimForServer, type DatabaseLog, describeDatabase, openDatabase, openReplicas } from '../db/connection';
import type { Engine } from '../db/engine';
import { stderrLog } from '../db/knex-log';
import { migrateToLatest } from '../db/migrate';
import type { ReadReplicas } from '../db/read-routing';
import { type Deps, type Services, servicesFromConfig } from '../services/container';
import { verifySealingKey } from '../services/sealing-key';
import { isClusterWorker } from './cluster';
import type { MetricsListening, MetricsRegistry } from './metrics';

/**
 * What a process of the service is for. `server`: the store API, the OAuth server, and (unless
 * asked not to) the webhook dispatchers and housekeeping (server.ts); `worker`: `svc worker`, the
 * dispatcher alone; `command`: a one-off `svc` command (`secrets reseal`, `migrate`, `store create`…).
 */
export type ProcessRole = 'server' | 'worker' | 'command';

/** What the assembly says as it goes (the server's start lines; nothing for the CLI). */
export interface AssemblyLog {
  /** The database is not answering yet, and the start retries. */
  waiting(message: string): void;
  /** The schema was brought up to date with these migrations. */
  migrated(names: string[]): void;
}

export interface AssemblyOptions {
  /** Where the database driver's complaints go (the server's logger); the driver's own default otherwise. */
  readonly databaseLog?: DatabaseLog;
  readonly log?: AssemblyLog;
  /** Ends the wait for the database early (the server's stop). */
  readonly signal?: AbortSignal;
}

/**
 * One process of the service, assembled in one order whatever its role, and taken apart in the
 * reverse one (`close`):
 *
 * 1. the database's claim, for a server (on SQLite one server process per data directory: db/connection.ts);
 * 2. the database, which a server waits for (a compose or Kubernetes start often brings it up
 *    second) and migrates unless a release job does (`DATABASE_MIGRATE_ON_START`);
 * 3. a server's read replicas (`DATABASE_REPLICA_URL`), polled from then on;
 * 4. metrics, for a server or a worker when `METRICS_PORT` asks (prom-client is loaded only then);
 * 5. the services, with their sealing key checked against the database, on first use: most
 *    commands need only the database;
 * 6. the metrics listener, opened by the role when it is ready to be scraped (`serveMetrics`: a
 *    server once its API listens, a worker at once).
 *
 * server.ts and the CLI build their processes here and nowhere else.
 */
export interface ServiceProcess {
  readonly role: ProcessRole;
  readonly config: Config;
  readonly database: Knex;
  /** The database and the system clock: what the commands that need no services work with. */
  readonly deps: Deps;
  /** The services, built once; their sealing key was accepted by the database's check. */
  services(): Promise<Services>;
  /**
   * Opens the metrics listener when metrics are kept: answers where it listens. A server process of
   * a cluster joins the primary's listener instead (runtime/cluster.ts), and answers nothing.
   */
  serveMetrics(): Promise<{ readonly port: number; readonly url: string } | undefined>;
  /** The metrics listener, the database pool, the data directory: idempotent. */
  close(): Promise<void>;
}

interface KeptMetrics {
  readonly registry: MetricsRegistry;
  readonly prometheus: typeof import('./metrics');
}

export async function assembleProcess(role: ProcessRole, config: Config, options: AssemblyOptions = {}): Promise<ServiceProcess> {
  const claim = role === 'server' ? claimForServer(config) : undefined;
  const { db: database, engine } = openDatabase(config, options.databaseLog ? { log: options.databaseLog } : {});
  let metricsListening: MetricsListening | undefined;
  let replicas: ReadReplicas | undefined;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await metricsListening?.close();
      await replicas?.close();
      await database.destroy();
      claim?.release();
    })());
  let kept: KeptMetrics | undefined;
  try {
    if (role === 'server') await prepareDatabase(config, database, options);
    if (role === 'server') replicas = openReplicas(config, database, engine.pools, (line) => (options.databaseLog ?? stderrLog).warn(line));
    kept = role !== 'command' && config.metrics ? await keepMetrics(database, engine, replicas) : undefined;
  } catch (error) {
    await close();
    throw error;
  }
  let built: Promise<Services> | undefined;
  const services = () =>
    (built ??= (async () => {
      const made = servicesFromConfig(config, database, engine, kept?.registry, replicas);
      await verifySealingKey(made);
      return made;
    })());
  return {
    role,
    config,
    database,
    deps: { db: database, engine, clock: systemClock },
    services,
    async serveMetrics() {
      if (!kept || !config.metrics) return undefined;
      // In a cluster the primary listens on METRICS_PORT and reads every process's registry.
      if (isClusterWorker()) {
        kept.prometheus.joinClusterMetrics(kept.registry);
        return undefined;
      }
      metricsListening ??= await kept.prometheus.serveMetrics(kept.registry, config.metrics);
      return { port: metricsListening.port, url: metricsUrl(config.metrics, metricsListening.port) };
    },
    close,
  };
}

/** Waits for the database, then migrates unless a release job does. */
async function prepareDatabase(config: Config, database: Knex, { log, signal }: AssemblyOptions): Promise<void> {
  await waitForDatabase(database, {
    timeoutMs: config.database.connectTimeoutMs,
    log: (message) => log?.waiting(message),
    named: config.databaseUrl ? `DATABASE_URL (${describeDatabase(config)})` : describeDatabase(config),
    ...(signal ? { signal } : {}),
  });
  if (!config.database.migrateOnStart) return;
  const applied = await migrateToLatest(database);
  if (applied.length > 0) log?.migrated(applied);
}

/**
 * Metrics are kept only when METRICS_PORT asks, and prom-client is loaded only then (its CPU metric
 * loads OpenTelemetry's API package for exemplars).
 */
async function keepMetrics(database: Knex, engine: Engine, replicas: ReadReplicas | undefined): Promise<KeptMetrics> {
  const prometheus = await import('./metrics.js');
  const registry = prometheus.createMetrics();
  registry.watchDatabase({ db: database, engine, clock: systemClock });
  if (replicas?.configured) registry.watchReplicas(replicas);
  return { registry, prometheus };
}
