import { systemClock } from '../core/clock';
import { type Config, ConfigError, loadConfig, metricsUrl } from '../core/config';
import { createDatabase } from '../db/connection';
import { PlatformError } from '../platform/stores';
import { StartError } from '../runtime/http-server';
import type { MetricsListening } from '../runtime/metrics';
import { type Deps, type Services, servicesFromConfig } from '../services/container';
import type { Metrics } from '../services/metrics';
import { verifySealingKey } from '../services/sealing-key';

export interface ConfiguredDatabase {
  readonly deps: Deps;
  /** The services of `svc worker` and `svc secrets reseal`, whose sealing keys the database's check has accepted. */
  services(): Promise<Services>;
  /** `svc worker`'s: with `METRICS_PORT`, counting into a `/metrics` listener of the process (closed by `close`). */
  servicesWithMetrics(): Promise<{ services: Services; metricsUrl?: string }>;
  close(): Promise<void>;
}

/**
 * A bad setting (a wrong sealing key among them, or a `METRICS_PORT` already taken) is the operator's
 * to fix: one line naming it (exit 1), not a stack trace.
 */
const asPlatformError = (error: unknown): unknown => (error instanceof ConfigError || error instanceof StartError ? new PlatformError(error.message) : error);

const rethrowAsPlatformError = (error: unknown): never => {
  throw asPlatformError(error);
};

function settings(): Config {
  try {
    return loadConfig();
  } catch (error) {
    throw asPlatformError(error);
  }
}

/** The database the settings name (DATABASE_URL, or SQLite under DATA_DIR), with the system clock; connects on the first query. */
export function configuredDatabase(): ConfiguredDatabase {
  const config = settings();
  const db = createDatabase(config);
  let metricsListening: MetricsListening | undefined;
  const checkedServices = async (metrics?: Metrics): Promise<Services> => {
    const services = servicesFromConfig(config, db, metrics);
    await verifySealingKey(services);
    return services;
  };
  const withMetrics = async (): Promise<{ services: Services; metricsUrl?: string }> => {
    if (!config.metrics) return { services: await checkedServices() };
    // prom-client is loaded only when metrics are kept, as in the server.
    const prometheus = await import('../runtime/metrics.js');
    const metrics = prometheus.createMetrics();
    metrics.watchDatabase(db, systemClock);
    const services = await checkedServices(metrics);
    metricsListening = await prometheus.serveMetrics(metrics, config.metrics);
    return { services, metricsUrl: metricsUrl(config.metrics, metricsListening.port) };
  };
  return {
    deps: { db, clock: systemClock },
    services: () => checkedServices().catch(rethrowAsPlatformError),
    servicesWithMetrics: () => withMetrics().catch(rethrowAsPlatformError),
    close: async () => {
      await metricsListening?.close();
      await db.destroy();
    },
  };
}
