import path from 'node:path';
import { z } from 'zod';
import {
  anyText,
  bindHost,
  databaseUrl,
  decimal,
  flag,
  isLoopbackHost,
  oneOf,
  origins,
  otlpEndpoint,
  publicUrl,
  replicaUrls,
  retrySchedule,
  secretKey,
  secretKeys,
  type TrustProxy,
  trustProxy,
  type ValueParser,
} from './config-values';
import { repositoryRoot } from './paths';

/**
 * Every setting of the service, read from the environment in this one place, typed and checked by
 * one zod schema. A bad value stops the start with one line naming the setting, what it takes and
 * what it was given; `docs/deploy.md`'s table of settings is generated from `SETTINGS` (a test
 * holds the two together). docs/decisions/0050-settings-in-one-schema.md.
 */

export const ENVIRONMENTS = ['development', 'test', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** The levels `LOG_LEVEL` takes, most severe first (pino's names). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface WebhookConfig {
  /** `WEBHOOK_WORKERS`: how many dispatchers the server runs (default 1); 0 leaves delivery to `svc worker`. */
  readonly workers: number;
  /** `WEBHOOK_RETRY_SCHEDULE`: the delays before each retry, in ms (comma-separated); the design's schedule when unset. */
  readonly retryScheduleMs: readonly number[] | undefined;
  /** `WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION`: one subscription's attempts under lease at once, across every worker. */
  readonly attemptsPerSubscription: number;
}

export interface DatabaseConfig {
  /**
   * `DATABASE_DIRECT_URL`: a session of PostgreSQL itself, when `DATABASE_URL` goes through a
   * transaction pooler (PgBouncer `pool_mode = transaction`): what needs a session (LISTEN, the
   * advisory locks of the migrations and the leader) opens it here, and the pool's statements run
   * unnamed (docs/decisions/0077-behind-a-transaction-pooler.md).
   */
  readonly directUrl?: string | undefined;
  /**
   * `DATABASE_REPLICA_URL`: PostgreSQL streaming replicas that serve the store API's lists and
   * analytics reports when they have replayed the caller's own writes and lag no more than
   * `replicaMaxLagMs` (docs/decisions/0078-read-replicas.md). Empty: every read on the primary.
   */
  readonly replicaUrls?: readonly string[];
  /** `DATABASE_REPLICA_MAX_LAG_MS`: a replica further behind the primary than this is skipped for it. */
  readonly replicaMaxLagMs?: number;
  /**
   * `DATABASE_REPLICA_TIMEOUT_MS`: a replica's read, lag poll or connection attempt that takes longer
   * is cut, the replica skipped and the read served by the primary (docs/decisions/0085-replica-deadlines.md).
   */
  readonly replicaTimeoutMs?: number;
  /** `DATABASE_REPLICA_POOLED`: the replica URLs go through a transaction pooler (statements unnamed, the timeout set by the pooler). */
  readonly replicaPooled?: boolean;
  /** The most connections a PostgreSQL pool holds (SQLite has one writer and one reader). */
  readonly poolMax: number;
  /** PostgreSQL's `statement_timeout` per connection, in ms; 0 leaves statements unbounded. */
  readonly statementTimeoutMs: number;
  /** How long the start waits for an unreachable database, retrying with backoff, before it gives up. */
  readonly connectTimeoutMs: number;
  /** Whether the start brings the schema up to date (`false` for a release job that runs `svc migrate`). */
  readonly migrateOnStart: boolean;
}

export interface ShutdownConfig {
  /** After a signal, how long the listener still accepts while readiness answers 503 (load balancers notice). */
  readonly delayMs: number;
  /** Then how long requests in flight may finish before their connections are closed. */
  readonly timeoutMs: number;
}

export interface Config {
  readonly environment: Environment;
  readonly port: number;
  /** `WEB_CONCURRENCY`: server processes sharing the port (node's cluster module); more than 1 on PostgreSQL only. */
  readonly webConcurrency: number;
  /** PostgreSQL when set (`postgres://...`); otherwise SQLite in `dataDir`. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly database: DatabaseConfig;
  /** Responses are checked against the spec outside production. */
  readonly validateResponses: boolean;
  /** Whether INTERNAL errors carry the underlying message (never in production). */
  readonly exposeInternalErrors: boolean;
  /** Requests per `quotaProofMs` (5 s) window: per installation on the store API, per client on /oauth. */
  readonly rateLimits: { readonly perInstallation: number; readonly perClient: number };
  /** The least severe log level written (`LOG_LEVEL`, default `info`). */
  readonly logLevel: LogLevel;
  /**
   * Express's `trust proxy`: which peers may say, in `X-Forwarded-For` and `X-Forwarded-Proto`, who
   * the client is and whether it came over HTTPS. `false` trusts none, so a client cannot choose the
   * address its sign-in failures are counted against; a number trusts that many hops; a list trusts
   * those addresses, subnets and Express's names for ranges.
   */
  readonly trustProxy: TrustProxy;
  /**
   * `SECRET_KEY`, or `SECRET_KEYS` during a rotation: the AES-256-GCM keys that seal what the server
   * must read back (webhook signing secrets, stored idempotent answers). Required in production;
   * elsewhere, when unset, a key is made once and kept in `dataDir` on SQLite, and PostgreSQL refuses
   * to start (credentials/sealing.ts, services/container.ts).
   */
  readonly secretKeys: SecretKeys | undefined;
  readonly webhooks: WebhookConfig;
  /** `SEED_DEMO`: create the demo store, its owner and app on an empty database (the quick start asks for it). */
  readonly seedDemo: boolean;
  readonly shutdown: ShutdownConfig;
  /** Browser origins allowed to call the store API (CORS); none by default. */
  readonly corsOrigins: readonly string[];
  /** The Prometheus listener (`/metrics`): off unless `METRICS_PORT` is set; never the API's port. */
  readonly metrics: MetricsConfig | undefined;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: traces are exported there (OpenTelemetry's SDK); unset, nothing of OpenTelemetry loads. */
  readonly tracing: { readonly endpoint: string } | undefined;
  /**
   * `PUBLIC_URL`: the origin clients reach the service at (scheme, host, port; no path), the OAuth
   * issuer of the metadata document and of every authorization response (RFC 8414, RFC 9207).
   */
  readonly publicUrl: string;
}

export interface MetricsConfig {
  readonly port: number;
  /** The address it binds: loopback unless `METRICS_HOST` says otherwise (a scraper on another host). */
  readonly host: string;
}

/** Where the metrics listener answers, once it listens on `port` (IPv6 addresses in brackets). */
export const metricsUrl = (metrics: MetricsConfig, port: number): string =>
  `http://${metrics.host.includes(':') ? `[${metrics.host}]` : metrics.host}:${port}/metrics`;

export interface SecretKeys {
  /** The first seals; every one opens what it sealed. */
  readonly keys: readonly Buffer[];
  /** The setting they were read from, named in messages. */
  readonly setting: 'SECRET_KEY' | 'SECRET_KEYS';
}

/** A bad setting: its message is the one line the start prints before it exits 1. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Ten minutes: a longer wait in a stop or a connect is a typo, and orchestrators kill long before. */
const LONGEST_WAIT_MS = 600_000;

/**
 * A setting: the variable, what it is for, its default as a reader sees it, and the schema that
 * turns the variable's text (undefined when unset) into its value, or refuses it with messages that
 * each complete "NAME ..." (core/config-values.ts parses; zod gathers every setting's problems).
 */
interface Setting<T> {
  readonly description: string;
  readonly defaultText: string;
  readonly schema: z.ZodType<T, string | undefined>;
}

const setting = <T>(description: string, defaultText: string, parse: ValueParser<T>): Setting<T> => ({
  description,
  defaultText,
  schema: z
    .string()
    .optional()
    .transform((text, context): T => {
      const reading = parse(text);
      if ('value' in reading) return reading.value;
      for (const problem of reading.problems) context.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    }),
});

/** `DATABASE_REPLICA_MAX_LAG_MS`'s default. */
export const DEFAULT_REPLICA_MAX_LAG_MS = 5000;

/**
 * `DATABASE_REPLICA_TIMEOUT_MS`'s default: a hundred times the slowest read a current replica
 * serves (a first page in under 1 ms, a report over a new range in about 10 ms), and a tenth of
 * the shortest timeout clients commonly set (docs/decisions/0085-replica-deadlines.md).
 */
export const DEFAULT_REPLICA_TIMEOUT_MS = 1000;

/** More server processes than this on one machine would only share its cores more thinly (and open DATABASE_POOL_MAX connections each). */
export const MAX_WEB_CONCURRENCY = 64;

export const SETTINGS = {
  NODE_ENV: setting(
    'Where the service runs. `production` needs `SECRET_KEY` (or `SECRET_KEYS`) and, for the server, `PUBLIC_URL`, writes JSON logs only, hides internal error messages and does not check answers against the spec; anything else is refused.',
    '`development`',
    oneOf(ENVIRONMENTS, 'development'),
  ),
  PORT: setting('The HTTP port, 0–65535 (0: any free port, which the start line names).', '`3000`', decimal('from 0 to 65535', 0, 65535, 3000)),
  WEB_CONCURRENCY: setting(
    `Server processes on this machine sharing \`PORT\` (node's cluster module: one listener, requests spread over the processes); one per core is the usual choice. Above 1 on PostgreSQL only: SQLite has one server process. At most ${MAX_WEB_CONCURRENCY}.`,
    '`1`',
    decimal(`from 1 to ${MAX_WEB_CONCURRENCY}`, 1, MAX_WEB_CONCURRENCY, 1),
  ),
  DATABASE_URL: setting('PostgreSQL (`postgres://user:password@host:5432/db`). Unset: SQLite in `DATA_DIR`, for one process.', 'unset (SQLite)', databaseUrl),
  DATABASE_DIRECT_URL: setting(
    'When `DATABASE_URL` goes through a transaction pooler (PgBouncer `pool_mode = transaction`): PostgreSQL itself, for what needs a session (LISTEN, the advisory locks of migrations and the housekeeping leader). Setting it tells the service it is pooled: its statements then run unnamed. Set the statement timeout on the pooler (`connect_query`).',
    'unset (`DATABASE_URL` is a session)',
    databaseUrl,
  ),
  DATABASE_REPLICA_URL: setting(
    "PostgreSQL streaming replicas of `DATABASE_URL`'s primary (hot standby), comma-separated: the store API's lists and analytics reports are read there when the replica has replayed the calling installation's last write and lags at most `DATABASE_REPLICA_MAX_LAG_MS`; otherwise, and whenever a replica fails, on the primary, with no error to the caller. Writes, token checks and everything else stay on the primary. Each replica gets a pool of `DATABASE_POOL_MAX` connections per process.",
    'unset (every read on the primary)',
    replicaUrls,
  ),
  DATABASE_REPLICA_MAX_LAG_MS: setting(
    "How far behind the primary a replica may be, in ms, and still serve reads (lists then miss at most this much of other callers' writes; a caller's own writes are always seen).",
    '`5000`',
    decimal('from 0 to 600000', 0, LONGEST_WAIT_MS, DEFAULT_REPLICA_MAX_LAG_MS),
  ),
  DATABASE_REPLICA_TIMEOUT_MS: setting(
    "How long a replica may take, in ms, to answer a read, a lag poll or a connection attempt: past it the connection is cut (never pooled again), the replica is skipped until a poll answers in time, and the primary serves the read, with no error to the caller. Also each replica session's `statement_timeout`. A replica that stops answering (a frozen host, a partition) adds at most this to the requests already sent to it.",
    '`1000`',
    decimal('from 10 to 600000', 10, LONGEST_WAIT_MS, DEFAULT_REPLICA_TIMEOUT_MS),
  ),
  DATABASE_REPLICA_POOLED: setting(
    'Whether `DATABASE_REPLICA_URL` goes through a transaction pooler (PgBouncer `pool_mode = transaction`) rather than to the replicas themselves: statements then run unnamed there, and the pooler sets the statement timeout (`connect_query`), as it does for a pooled primary. Unset, each replica is a session that gets `DATABASE_REPLICA_TIMEOUT_MS` as its `statement_timeout`, however `DATABASE_URL` is reached.',
    '`false`',
    flag(false),
  ),
  DATA_DIR: setting(
    'Where SQLite keeps its file (and, on SQLite outside production, the development sealing key).',
    '`./data` at the repository root',
    anyText,
  ),
  SECRET_KEY: setting(
    'The key that seals webhook signing secrets and stored idempotent answers: 32 random bytes as 64 hex digits or base64 (`openssl rand -hex 32`), the same on every instance (the database keeps a check of it and refuses another). Required in production and on PostgreSQL; on SQLite elsewhere made once in `DATA_DIR`.',
    'required in production and on PostgreSQL',
    secretKey,
  ),
  SECRET_KEYS: setting(
    'Instead of `SECRET_KEY` while rotating it: keys in the same form, comma-separated (`new,old`). The first seals, every one opens; `svc secrets reseal` moves everything under the first ("Rotating SECRET_KEY" in docs/deploy.md).',
    'unset',
    secretKeys,
  ),
  LOG_LEVEL: setting(`The least severe log line written: ${LOG_LEVELS.join(', ')}.`, '`info`', oneOf(LOG_LEVELS, 'info')),
  TRUST_PROXY: setting(
    'The proxies whose `X-Forwarded-For`/`X-Forwarded-Proto` are believed: a hop count, or addresses, CIDR subnets and `loopback`/`linklocal`/`uniquelocal`, comma-separated.',
    'unset (no proxy)',
    trustProxy,
  ),
  RATE_LIMIT_PER_INSTALLATION: setting('Store API requests per installation per 5 s window.', '`100`', decimal('from 1 to 1000000', 1, 1_000_000, 100)),
  RATE_LIMIT_PER_CLIENT: setting('OAuth requests per client per 5 s window.', '`60`', decimal('from 1 to 1000000', 1, 1_000_000, 60)),
  WEBHOOK_WORKERS: setting('Webhook dispatchers inside the server; `0` leaves delivery to `svc worker` processes.', '`1`', decimal('from 0 to 64', 0, 64, 1)),
  WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION: setting(
    "One subscription's attempts on the wire at once, across every dispatcher and `svc worker` (the worker holding its deliveries sends them): a slow or dead endpoint holds up only its own deliveries, and no receiver gets more than this at once.",
    '`4`',
    decimal('from 1 to 64', 1, 64, 4),
  ),
  WEBHOOK_RETRY_SCHEDULE: setting(
    'Comma-separated delays before each retry, in ms (for staging, tests, and `1000,2000` to try webhooks on a laptop: docs/guides/06-webhooks.md). A delay is taken when an attempt fails: retries scheduled before a restart keep their time.',
    'about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h',
    retrySchedule,
  ),
  SEED_DEMO: setting(
    'On an empty database, create the demo store, its owner (whose password is public) and a demo app, and simulate 90 days of orders. The quick start sets it; refused in production.',
    '`false`',
    flag(false),
  ),
  MIGRATE_ON_START: setting(
    'Bring the schema up to date at start (the expand phase; `svc migrate --contract` runs the contract phase after a rollout). `false` when a release job runs `svc migrate`.',
    '`true`',
    flag(true),
  ),
  SHUTDOWN_DELAY_MS: setting(
    'After SIGTERM, how long the listener keeps accepting while `/readyz` answers 503, so load balancers stop sending first.',
    '`5000` in production, `0` elsewhere',
    decimal('from 0 to 600000', 0, LONGEST_WAIT_MS, undefined),
  ),
  SHUTDOWN_TIMEOUT_MS: setting(
    'Then how long requests in flight may finish before their connections are closed.',
    '`20000`',
    decimal('from 0 to 600000', 0, LONGEST_WAIT_MS, 20_000),
  ),
  DATABASE_POOL_MAX: setting('PostgreSQL connections per process.', '`10`', decimal('from 1 to 1000', 1, 1000, 10)),
  DATABASE_STATEMENT_TIMEOUT_MS: setting(
    "PostgreSQL's `statement_timeout` for every connection, in ms; `0` leaves statements unbounded.",
    '`30000`',
    decimal('from 0 to 3600000', 0, 3_600_000, 30_000),
  ),
  DATABASE_CONNECT_TIMEOUT_MS: setting(
    'How long the start retries an unreachable database, with backoff, before it gives up.',
    '`60000`',
    decimal('from 0 to 600000', 0, LONGEST_WAIT_MS, 60_000),
  ),
  CORS_ORIGINS: setting('Browser origins allowed to call the store API, comma-separated (`https://app.example.com`).', 'none', origins),
  METRICS_PORT: setting(
    'The port of a separate listener serving Prometheus metrics at `/metrics` (never the API port), for the server and for `svc worker`. Unset: no metrics are kept and nothing listens.',
    'unset (off)',
    decimal('from 0 to 65535', 0, 65535, undefined),
  ),
  METRICS_HOST: setting('The address the metrics listener binds; `0.0.0.0` lets a scraper on another host (or pod) reach it.', '`127.0.0.1`', bindHost),
  PUBLIC_URL: setting(
    'The origin clients reach the service at (`https://api.example.com`: scheme, host and port, no path): the OAuth issuer, named in `/.well-known/oauth-authorization-server` and in the `iss` of every authorization response. Required by the server in production, and https there unless the host is localhost; `svc` commands do not need it.',
    '`http://localhost:<PORT>` (not in production)',
    publicUrl,
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: setting(
    "An OTLP/HTTP collector (`http://collector:4318`): traces of requests, Express, pg and Knex are exported there with OpenTelemetry's Node SDK, which also reads the other `OTEL_*` variables (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, …). Unset: nothing of OpenTelemetry loads.",
    'unset (no export)',
    otlpEndpoint,
  ),
} as const;

type SettingName = keyof typeof SETTINGS;
type Values = { [Name in SettingName]: z.output<(typeof SETTINGS)[Name]['schema']> };

const schema = z.object(
  Object.fromEntries(Object.entries(SETTINGS).map(([name, { schema }]) => [name, schema])) as {
    [Name in SettingName]: (typeof SETTINGS)[Name]['schema'];
  },
);

/**
 * Who reads the settings: the server, which answers OAuth as the issuer `PUBLIC_URL` names, or an
 * `svc` command (a migration, the webhook worker), which names no issuer.
 */
export type ConfigReader = 'server' | 'command';

/** Rules between settings, checked once each is valid on its own. */
function crossChecks(values: Values, reader: ConfigReader): string[] {
  const problems: string[] = [];
  if (values.SECRET_KEY && values.SECRET_KEYS) {
    problems.push('SECRET_KEY and SECRET_KEYS are both set: keep one (SECRET_KEYS=new,old while rotating, SECRET_KEY for a single key)');
  } else if (values.NODE_ENV === 'production' && !values.SECRET_KEY && !values.SECRET_KEYS) {
    problems.push('SECRET_KEY is required in production: 32 random bytes as 64 hex digits or base64 (openssl rand -hex 32), or SECRET_KEYS while rotating');
  }
  // Fail closed: a guessed issuer (http://localhost:<PORT>) would be advertised to every client and put in every redirect's `iss`.
  if (reader === 'server' && values.NODE_ENV === 'production' && !values.PUBLIC_URL) {
    problems.push('PUBLIC_URL is required in production: the https origin clients reach the service at (https://api.example.com), the OAuth issuer they check');
  }
  if (values.WEB_CONCURRENCY > 1 && !values.DATABASE_URL) {
    problems.push(
      `WEB_CONCURRENCY=${values.WEB_CONCURRENCY} needs PostgreSQL (DATABASE_URL): on SQLite one server process serves the data directory (its quotas and housekeeping live in it); leave WEB_CONCURRENCY at 1`,
    );
  }
  if (values.DATABASE_DIRECT_URL && !values.DATABASE_URL) {
    problems.push('DATABASE_DIRECT_URL is set without DATABASE_URL: it is the direct session beside a pooled DATABASE_URL; set both, or neither for SQLite');
  }
  if (values.DATABASE_REPLICA_URL.length > 0 && !values.DATABASE_URL) {
    problems.push(
      'DATABASE_REPLICA_URL is set without DATABASE_URL: replicas are of a PostgreSQL primary; set DATABASE_URL, or unset DATABASE_REPLICA_URL for SQLite',
    );
  }
  if (values.WEB_CONCURRENCY > 1 && values.SEED_DEMO) {
    problems.push('SEED_DEMO seeds from one server process: start once with WEB_CONCURRENCY=1 to seed, then with more');
  }
  if (values.NODE_ENV === 'production' && values.SEED_DEMO) {
    problems.push("SEED_DEMO is refused in production: the demo owner's password is public");
  }
  if (values.NODE_ENV === 'production' && values.PUBLIC_URL?.startsWith('http:') && !isLoopbackHost(new URL(values.PUBLIC_URL).hostname)) {
    problems.push(`PUBLIC_URL must be https in production (it is the OAuth issuer clients check), not "${values.PUBLIC_URL}"; plain http is for localhost`);
  }
  return problems;
}

function shownValue(value: unknown): string {
  const text = typeof value === 'string' ? value : String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

const SECRET_SETTINGS = ['SECRET_KEY', 'SECRET_KEYS', 'DATABASE_URL', 'DATABASE_DIRECT_URL', 'DATABASE_REPLICA_URL', 'OTEL_EXPORTER_OTLP_ENDPOINT'];

function secretKeysOf(values: Values): SecretKeys | undefined {
  if (values.SECRET_KEYS) return { keys: values.SECRET_KEYS, setting: 'SECRET_KEYS' };
  return values.SECRET_KEY ? { keys: [values.SECRET_KEY], setting: 'SECRET_KEY' } : undefined;
}

/** Reads the configuration from the environment for `reader`; throws a ConfigError naming every bad setting. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, reader: ConfigReader = 'server'): Config {
  const raw = Object.fromEntries(Object.keys(SETTINGS).map((name) => [name, env[name]]));
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      // A secret's text is never echoed back.
      const given = SECRET_SETTINGS.includes(name) ? '' : `, not "${shownValue(raw[name])}"`;
      return `${name} ${issue.message}${given}`;
    });
    throw new ConfigError(lines.join('; '));
  }
  const values = parsed.data as Values;
  const problems = crossChecks(values, reader);
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
  const environment = values.NODE_ENV as Environment;
  return {
    environment,
    port: values.PORT,
    webConcurrency: values.WEB_CONCURRENCY,
    databaseUrl: values.DATABASE_URL,
    dataDir: path.resolve(values.DATA_DIR || path.join(repositoryRoot, 'data')),
    database: {
      directUrl: values.DATABASE_DIRECT_URL,
      replicaUrls: values.DATABASE_REPLICA_URL,
      replicaMaxLagMs: values.DATABASE_REPLICA_MAX_LAG_MS,
      replicaTimeoutMs: values.DATABASE_REPLICA_TIMEOUT_MS,
      replicaPooled: values.DATABASE_REPLICA_POOLED,
      poolMax: values.DATABASE_POOL_MAX,
      statementTimeoutMs: values.DATABASE_STATEMENT_TIMEOUT_MS,
      connectTimeoutMs: values.DATABASE_CONNECT_TIMEOUT_MS,
      migrateOnStart: values.MIGRATE_ON_START,
    },
    validateResponses: environment !== 'production',
    exposeInternalErrors: environment !== 'production',
    rateLimits: { perInstallation: values.RATE_LIMIT_PER_INSTALLATION, perClient: values.RATE_LIMIT_PER_CLIENT },
    logLevel: values.LOG_LEVEL as LogLevel,
    trustProxy: values.TRUST_PROXY,
    secretKeys: secretKeysOf(values),
    webhooks: {
      workers: values.WEBHOOK_WORKERS,
      retryScheduleMs: values.WEBHOOK_RETRY_SCHEDULE,
      attemptsPerSubscription: values.WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION,
    },
    seedDemo: values.SEED_DEMO,
    shutdown: { delayMs: values.SHUTDOWN_DELAY_MS ?? (environment === 'production' ? 5000 : 0), timeoutMs: values.SHUTDOWN_TIMEOUT_MS },
    corsOrigins: values.CORS_ORIGINS,
    metrics: values.METRICS_PORT === undefined ? undefined : { port: values.METRICS_PORT, host: values.METRICS_HOST },
    tracing: values.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : { endpoint: values.OTEL_EXPORTER_OTLP_ENDPOINT },
    publicUrl: values.PUBLIC_URL ?? `http://localhost:${values.PORT}`,
  };
}

/** The settings as a Markdown table, for `docs/deploy.md` (generated; a test compares). */
export function settingsTable(): string {
  const rows = Object.entries(SETTINGS).map(([name, { description, defaultText }]) => `| \`${name}\` | ${defaultText} | ${description} |`);
  return ['| Setting | Default | What it does |', '|---|---|---|', ...rows].join('\n');
}
