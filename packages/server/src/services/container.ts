import path from 'node:path';
import type { Knex } from 'knex';
import type { ApiVersionRegistry } from '../core/api-versions';
import { type Clock, systemClock } from '../core/clock';
import { type Config, ConfigError, type Environment } from '../core/config';
import { QUOTA_WINDOW_MS } from '../core/limits';
import { derivedKey, developmentKey, SECRET_KEY_FILE, type Sealer, sealerOf } from '../credentials/sealing';
import type { Engine } from '../db/engine';
import { noReplicas, type ReadReplicas } from '../db/read-routing';
import { publishedApiVersions, type VersionUseLog, versionUseLog } from './api-versions';
import { type Metrics, noMetrics } from './metrics';
import { type Quota, type RateLimiter, rateLimiter } from './rate-limit';
import { type Readiness, readinessOf } from './readiness';
import { type ServiceKeys, serviceKeys } from './service-keys';
import { type AddressPolicy, httpTransport, type Resolver, type WebhookTransport } from './webhook-transport';

/** What every domain function works with: the database, its engine's ports and the clock (all injected, never global). */
export interface Deps {
  readonly db: Knex;
  /** The database's engine, by concern (db/engine.ts): reads, locks, webhook work, quotas, partitions, pools. */
  readonly engine: Engine;
  readonly clock: Clock;
}

/** How webhooks are delivered by this process: which endpoints are allowed, how they are called, how often retried. */
export interface WebhookSettings {
  /** Production takes `https` endpoints on public addresses only; elsewhere `http` and loopback receivers are allowed too. */
  readonly environment: Environment;
  readonly policy: AddressPolicy;
  readonly transport: WebhookTransport;
  /** The delays before each retry (the design's schedule, or `WEBHOOK_RETRY_SCHEDULE`). */
  readonly retryScheduleMs: readonly number[];
  /** One subscription's attempts on the wire at once, across every worker (`WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION`). */
  readonly attemptsPerSubscription: number;
}

/** Everything the handlers reach the domain through: one object per running app. */
export interface Services extends Deps {
  readonly limiter: RateLimiter;
  readonly quotas: { readonly installation: Quota; readonly client: Quota };
  /** Seals what the server must read back (signing secrets, stored idempotent answers). */
  readonly sealer: Sealer;
  readonly webhooks: WebhookSettings;
  /** Whether this instance should get traffic (`/readyz`); the stop drains it first. */
  readonly readiness: Readiness;
  /** The date versions served (spec/versions.yaml; tests give a registry of their own). */
  readonly apiVersions: ApiVersionRegistry;
  /** What is counted for `/metrics` (`noMetrics` unless `METRICS_PORT` is set). */
  readonly metrics: Metrics;
  /** The OAuth issuer (`PUBLIC_URL`): the metadata document's `issuer`, the `iss` of authorization responses. */
  readonly issuer: string;
  /** The server's named secrets (ETags, cursors), read once per process. */
  readonly serviceKeys: ServiceKeys;
  /** Which installation called under which date version, written once a day per pair. */
  readonly versionUse: VersionUseLog;
  /** Where lists and reports may be read (`DATABASE_REPLICA_URL`); none: every read on `db`. */
  readonly replicas: ReadReplicas;
}

/** The issuer of services made without one (tests, tools): the local server `pnpm start` runs. */
export const DEFAULT_ISSUER = 'http://localhost:3000';

/** About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: eight attempts over about 28 hours (docs/decisions/0019-webhook-delivery.md). */
export const RETRY_SCHEDULE_MS: readonly number[] = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

/** The key of tests and tools (public: it seals nothing real); a `svc worker` they start is given it as SECRET_KEY. */
export const TOOLS_KEY = derivedKey('tests and tools');

/** One subscription's attempts at once when `WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION` is unset. */
export const ATTEMPTS_PER_SUBSCRIPTION = 4;

export interface WebhookOptions {
  readonly environment?: Environment;
  readonly resolve?: Resolver;
  readonly transport?: WebhookTransport;
  readonly retryScheduleMs?: readonly number[];
  readonly attemptsPerSubscription?: number;
}

export interface ServiceOptions {
  db: Knex;
  /** `db`'s engine, as db/connection.ts opened it with `db`. */
  engine: Engine;
  clock?: Clock;
  rateLimits: Config['rateLimits'];
  /** What seals (`SECRET_KEY`, `SECRET_KEYS` or the data directory's key); without one, a key derived from a public text, for tests and tools. */
  sealer?: Sealer;
  webhooks?: WebhookOptions;
  /** The date versions served; the published registry when left out. */
  apiVersions?: ApiVersionRegistry;
  /** Counted for `/metrics`; nothing when left out. */
  metrics?: Metrics;
  /** The OAuth issuer (`PUBLIC_URL`); {@link DEFAULT_ISSUER} when left out. */
  issuer?: string;
  /** Read replicas of `db` (db/connection openReplicas); none when left out. */
  replicas?: ReadReplicas;
}

/** Quota counters live in PostgreSQL when several instances share it, in memory on SQLite (one server process). */
export function createServices({
  db,
  engine,
  clock = systemClock,
  rateLimits,
  sealer,
  webhooks = {},
  apiVersions = publishedApiVersions,
  metrics = noMetrics,
  issuer = DEFAULT_ISSUER,
  replicas = noReplicas(db),
}: ServiceOptions): Services {
  const environment = webhooks.environment ?? 'development';
  const policy: AddressPolicy = { allowLoopback: environment !== 'production' };
  return {
    db,
    engine,
    clock,
    limiter: rateLimiter(db, engine.quotas.counters),
    quotas: {
      installation: { policy: 'installation', limit: rateLimits.perInstallation, windowMs: QUOTA_WINDOW_MS },
      client: { policy: 'client', limit: rateLimits.perClient, windowMs: QUOTA_WINDOW_MS },
    },
    sealer: sealer ?? sealerOf(TOOLS_KEY, 'the tools key'),
    webhooks: {
      environment,
      policy,
      transport: webhooks.transport ?? httpTransport({ policy, clock, ...(webhooks.resolve ? { resolve: webhooks.resolve } : {}) }),
      retryScheduleMs: webhooks.retryScheduleMs ?? RETRY_SCHEDULE_MS,
      attemptsPerSubscription: webhooks.attemptsPerSubscription ?? ATTEMPTS_PER_SUBSCRIPTION,
    },
    readiness: readinessOf(db, engine.pools, replicas),
    apiVersions,
    metrics,
    issuer,
    serviceKeys: serviceKeys(db, clock),
    versionUse: versionUseLog({ db, clock }),
    replicas,
  };
}

/**
 * The configured keys, or on SQLite the data directory's. Instances sharing a PostgreSQL database
 * must seal under one key, and a key made in a data directory is one machine's own: there the start
 * refuses instead (docs/decisions/0054-one-sealing-key.md).
 */
export function sealerFromConfig(config: Pick<Config, 'secretKeys' | 'databaseUrl' | 'dataDir'>): Sealer {
  if (config.secretKeys) return sealerOf(config.secretKeys.keys, config.secretKeys.setting);
  if (config.databaseUrl) {
    throw new ConfigError(
      "SECRET_KEY is required with DATABASE_URL: every instance on one PostgreSQL database must seal with the same key, and a key made in DATA_DIR is this machine's own (openssl rand -hex 32, then give every instance that SECRET_KEY)",
    );
  }
  return sealerOf(developmentKey(config.dataDir), `the development key in ${path.join(config.dataDir, SECRET_KEY_FILE)}`);
}

/** The services of a running process (the server, `svc worker`): its sealing keys and webhook settings. */
export function servicesFromConfig(config: Config, db: Knex, engine: Engine, metrics: Metrics = noMetrics, replicas?: ReadReplicas): Services {
  return createServices({
    db,
    engine,
    metrics,
    ...(replicas ? { replicas } : {}),
    rateLimits: config.rateLimits,
    issuer: config.publicUrl,
    sealer: sealerFromConfig(config),
    webhooks: {
      environment: config.environment,
      attemptsPerSubscription: config.webhooks.attemptsPerSubscription,
      ...(config.webhooks.retryScheduleMs ? { retryScheduleMs: config.webhooks.retryScheduleMs } : {}),
    },
  });
}
