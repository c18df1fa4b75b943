import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AggregatorRegistry, Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { MetricsConfig } from '../core/config';
import { StartError } from '../core/start-error';
import type { ReadReplicas } from '../db/read-routing';
import type { Deps } from '../services/container';
import { type Metrics, methodLabel } from '../services/metrics';
import { outboxBacklog } from '../services/outbox';

/**
 * The process's metrics, kept with prom-client in a registry of its own (never the library's global
 * one, so two apps in one process, as in tests, do not mix), and the listener that serves them.
 * Names follow OpenTelemetry's HTTP semantic conventions where they have one
 * (`http_server_request_duration_seconds`, `http_request_method`, `http_response_status_code`), and
 * the service's own start with `svc_`. Every label takes few values: operationIds, methods, statuses,
 * outcomes. docs/decisions/0061-metrics-and-traces.md.
 */

/** OpenTelemetry's advice for HTTP durations, in seconds. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
/** Queries are shorter than requests; a statement past 30 s is cancelled (DATABASE_STATEMENT_TIMEOUT_MS). */
const QUERY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** A webhook attempt lasts up to its 15 s timeout. */
const WEBHOOK_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15];

export interface MetricsRegistry extends Metrics {
  readonly registry: Registry;
  /** Times the queries run through `db` (Knex's query events) and reads its pool and outbox at each scrape. */
  watchDatabase(deps: Deps): void;
  /** Reads each replica's state and lag at each scrape. */
  watchReplicas(replicas: ReadReplicas): void;
}

export function createMetrics(): MetricsRegistry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP server requests, by operation (operationId, route template or "unmatched"), method and status; its _count is the request count.',
    labelNames: ['operation', 'http_request_method', 'http_response_status_code'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'svc_rate_limited_requests_total',
    help: 'Requests refused with 429 RATE_LIMITED, by quota (installation or client).',
    labelNames: ['policy'] as const,
    registers: [registry],
  });
  const replays = new Counter({
    name: 'svc_idempotency_replays_total',
    help: 'Idempotency-Key requests answered from a stored answer (Idempotent-Replayed: true).',
    registers: [registry],
  });
  const conflicts = new Counter({
    name: 'svc_idempotency_conflicts_total',
    help: 'Idempotency-Key requests refused: in_progress (409) or key_reused (422).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const attempts = new Histogram({
    name: 'svc_webhook_delivery_duration_seconds',
    help: 'Webhook delivery attempts by outcome (succeeded, rejected: a non-2xx answer, unreachable: no answer) and their latency; its _count counts them.',
    labelNames: ['outcome'] as const,
    buckets: WEBHOOK_BUCKETS,
    registers: [registry],
  });
  const claims = new Counter({
    name: 'svc_webhook_claims_total',
    help: 'Claims of due webhook deliveries made by this process’s dispatchers.',
    registers: [registry],
  });
  const claimed = new Counter({ name: 'svc_webhook_claimed_deliveries_total', help: 'Webhook deliveries taken by those claims.', registers: [registry] });
  const routedReads = new Counter({
    name: 'svc_db_routed_reads_total',
    help: 'Lists and analytics reports by who served them (replica or primary) and why: current (a replica had the caller’s writes and was within the lag bound), own_write (no replica had replayed the caller’s last write), lagging, unavailable, failed (the replica failed the read and the primary served it), walk (a later page of a walk begun on the primary).',
    labelNames: ['served_by', 'reason'] as const,
    registers: [registry],
  });
  // One child per label set, found by a string key: prom-client would hash the label object on every observation.
  const requestSeries = new Map<string, { observe(value: number): void }>();

  return {
    enabled: true,
    registry,
    request(operation, method, status, seconds) {
      const key = `${operation} ${method} ${status}`;
      let series = requestSeries.get(key);
      if (!series) {
        series = requests.labels(operation, methodLabel(method), String(status));
        requestSeries.set(key, series);
      }
      series.observe(seconds);
    },
    rateLimited: (policy) => rateLimited.inc({ policy }),
    idempotency(outcome) {
      if (outcome === 'replayed') replays.inc();
      else conflicts.inc({ reason: outcome });
    },
    webhookAttempt: (outcome, seconds) => attempts.observe({ outcome }, seconds),
    webhookClaim(deliveries) {
      claims.inc();
      claimed.inc(deliveries);
    },
    routedRead: (servedBy, reason) => routedReads.inc({ served_by: servedBy, reason }),
    watchDatabase: (deps) => watchDatabase(registry, deps),
    watchReplicas: (replicas) => watchReplicas(registry, replicas),
  };
}

/** The query-duration histogram (Knex's events), and the pool's and the outbox's gauges, read when scraped. */
function watchDatabase(registry: Registry, { db, engine, clock }: Deps): void {
  const queries = new Histogram({
    name: 'svc_db_query_duration_seconds',
    help: 'Duration of database queries run through Knex, by outcome (ok or error).',
    labelNames: ['outcome'] as const,
    buckets: QUERY_BUCKETS,
    registers: [registry],
  });
  const ok = queries.labels('ok');
  const failed = queries.labels('error');
  const started = new Map<string, number>();
  const ended = (series: { observe(value: number): void }) => (_result: unknown, query: { __knexQueryUid?: string }) => {
    const uid = query.__knexQueryUid;
    const at = uid === undefined ? undefined : started.get(uid);
    if (at === undefined) return;
    started.delete(uid as string);
    series.observe((performance.now() - at) / 1000);
  };
  db.on('query', (query: { __knexQueryUid?: string }) => {
    if (query.__knexQueryUid === undefined) return;
    // A query that never answered (its connection died unseen) must not be kept forever.
    if (started.size >= 10_000) started.clear();
    started.set(query.__knexQueryUid, performance.now());
  });
  db.on('query-response', ended(ok));
  db.on('query-error', ended(failed));

  new Gauge({
    name: 'svc_db_pool_connections_in_use',
    help: 'Database connections checked out of the pool.',
    registers: [registry],
    collect() {
      this.set(engine.pools.usage(db).inUse);
    },
  });
  const pooled = engine.pools.pooled ? 1 : 0;
  new Gauge({
    name: 'svc_db_pooled',
    help: 'Whether DATABASE_URL goes through a transaction pooler (DATABASE_DIRECT_URL is set): then the pool counts client connections to the pooler, and 2-3 direct sessions per process are outside it.',
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.set(pooled);
    },
  });
  new Gauge({
    name: 'svc_db_pool_acquires_waiting',
    help: 'Requests for a connection waiting on the pool (all connections in use).',
    registers: [registry],
    collect() {
      this.set(engine.pools.usage(db).waiting);
    },
  });
  // Both outbox gauges come from one query per scrape, shared by their two collect calls.
  let backlog: Promise<{ waiting: number; oldestAgeSeconds: number } | undefined> | undefined;
  const readBacklog = () => {
    backlog ??= outboxBacklog(db, clock.now())
      .catch(() => undefined) // a scrape while the database is away still answers the other metrics
      .finally(() => setImmediate(() => (backlog = undefined)));
    return backlog;
  };
  new Gauge({
    name: 'svc_outbox_events_waiting',
    help: 'Outbox events not yet fanned out to their webhook deliveries.',
    registers: [registry],
    // Every process of a cluster reads the same database: its /metrics shows the figure, not N times it.
    aggregator: 'max',
    async collect() {
      const read = await readBacklog();
      if (read) this.set(read.waiting);
    },
  });
  new Gauge({
    name: 'svc_outbox_oldest_event_age_seconds',
    help: 'Age of the oldest outbox event not yet fanned out (0 when none waits).',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const read = await readBacklog();
      if (read) this.set(read.oldestAgeSeconds);
    },
  });
}

/** Each replica's lag and whether it serves, as the process's last poll found them. */
function watchReplicas(registry: Registry, replicas: ReadReplicas): void {
  new Gauge({
    name: 'svc_db_replica_lag_seconds',
    help: 'How far behind the primary each read replica was at this process’s last poll (absent while it does not answer).',
    labelNames: ['replica'] as const,
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.reset();
      for (const replica of replicas.status()) if (replica.lagMs !== null) this.set({ replica: replica.name }, replica.lagMs / 1000);
    },
  });
  new Gauge({
    name: 'svc_db_replica_serving',
    help: 'Whether each read replica may serve reads now: 1 when it answers and lags within DATABASE_REPLICA_MAX_LAG_MS, else 0.',
    labelNames: ['replica'] as const,
    registers: [registry],
    aggregator: 'min',
    collect() {
      for (const replica of replicas.status()) this.set({ replica: replica.name }, replica.state === 'current' ? 1 : 0);
    },
  });
}

export interface MetricsListening {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The metrics listener: `GET /metrics` in Prometheus's text format, on its own port and address
 * (loopback unless `METRICS_HOST` says otherwise), never on the API's listener: the API's callers
 * do not see the service's internals, and a scraper needs no credentials.
 */
export function serveMetrics(metrics: MetricsRegistry, config: MetricsConfig): Promise<MetricsListening> {
  return serveText({ read: () => metrics.registry.metrics(), contentType: metrics.registry.contentType }, config);
}

/**
 * With `WEB_CONCURRENCY`, the server processes share the API's port, and a listener of each on
 * `METRICS_PORT` would be shared the same way (each scrape answered by whichever process the
 * connection went to). So the primary alone listens on it and answers with every process's metrics
 * added up (prom-client's AggregatorRegistry, over the cluster's channel); the processes answer it
 * from their own registries (`joinClusterMetrics`).
 */
export function serveClusterMetrics(config: MetricsConfig): Promise<MetricsListening> {
  const aggregator = new AggregatorRegistry();
  return serveText({ read: () => aggregator.clusterMetrics(), contentType: aggregator.contentType }, config);
}

/** In a server process of a cluster: the primary's `/metrics` reads this registry. */
export function joinClusterMetrics(metrics: MetricsRegistry): void {
  new AggregatorRegistry(); // its construction makes this process answer the primary's requests
  AggregatorRegistry.setRegistries([metrics.registry]);
}

interface MetricsText {
  read(): Promise<string>;
  readonly contentType: string;
}

async function serveText(source: MetricsText, config: MetricsConfig): Promise<MetricsListening> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: metrics are at /metrics.\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' }).end();
    source.read().then(
      (text) => res.writeHead(200, { 'Content-Type': source.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (error: unknown) =>
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics failed: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE' || error.code === 'EACCES'
          ? new StartError(`METRICS_PORT ${config.port} on ${config.host} cannot be had (${error.code})`)
          : error,
      ),
    );
    server.listen(config.port, config.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
