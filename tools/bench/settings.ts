import path from 'node:path';

/**
 * Every BENCH_* setting of the bench's scripts, read here and nowhere else. Each script has its own
 * defaults (a comparison runs shorter slices than `pnpm bench`, the fleet more connections), so each
 * reads its settings with one function below, inside its `main`: a wrong value stops the script with
 * one line naming the setting (runScript, tools/bench/report.ts).
 */

const text = (name: string): string | undefined => process.env[name] || undefined;

/** A number, or the fallback when unset; positive unless `zero` is allowed, rounded when `whole`. */
export function numberFromEnv(name: string, fallback: number, { zero = false, whole = false } = {}): number {
  const value = text(name);
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isFinite(number) || number < 0 || (number === 0 && !zero))
    throw new Error(`${name} must be a ${zero ? 'non-negative' : 'positive'} number, not "${value}"`);
  return whole ? Math.round(number) : number;
}

/** BENCH_CASES: some of the script's case names (in the order given), or undefined for all of them. */
export function casesFromEnv<Name extends string>(known: readonly Name[]): Name[] | undefined {
  const value = text('BENCH_CASES');
  if (value === undefined) return undefined;
  const names = value.split(',').map((name) => {
    const found = known.find((candidate) => candidate === name.trim());
    if (!found) throw new Error(`BENCH_CASES: "${name.trim()}" is not one of ${known.join(', ')}`);
    return found;
  });
  return [...new Set(names)];
}

/**
 * BENCH_SERVER_CPUS: the CPUs (a `taskset` list such as `0` or `0-3,6`) the servers are kept on,
 * the load generator on the others (docs/performance.md).
 */
export function serverCpusFromEnv(): string | undefined {
  const value = text('BENCH_SERVER_CPUS');
  if (value !== undefined && !/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(value))
    throw new Error(`BENCH_SERVER_CPUS must be a CPU list such as 0 or 0-3, not "${value}"`);
  return value;
}

/** BENCH_DATABASE_URL: the PostgreSQL server the store API (or the webhook worker) runs on. */
const databaseUrl = () => text('BENCH_DATABASE_URL');

/** The length of the runs: the measured one, and the warm-up before it (at most 3 s unless asked). */
function runLength(defaultSeconds: number, defaultWarmup = (seconds: number) => Math.min(3, seconds)) {
  const seconds = numberFromEnv('BENCH_SECONDS', defaultSeconds);
  return { seconds, warmupSeconds: numberFromEnv('BENCH_WARMUP_SECONDS', defaultWarmup(seconds)) };
}

/** The webhook cases (tools/bench/webhooks.ts), within `pnpm bench` or alone. */
export function webhookSettings() {
  return {
    /** Events queued at once (`webhooks.deliveries`). */
    deliveries: numberFromEnv('BENCH_WEBHOOK_DELIVERIES', 10_000, { whole: true }),
    /** The burst whose outbox lag is measured (`webhooks.outbox lag`). */
    burst: numberFromEnv('BENCH_WEBHOOK_BURST', 10_000, { whole: true }),
    /** One subscription's replayed backlog, what every recovery is (`webhooks.recovery`). */
    recovery: numberFromEnv('BENCH_WEBHOOK_RECOVERY', 7_000, { whole: true }),
    databaseUrl: databaseUrl(),
    /** The server's own setting, so that the bench measures what an operator would set. */
    attemptsPerSubscription:
      text('WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION') === undefined ? undefined : numberFromEnv('WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION', 0, { whole: true }),
  };
}

/** `pnpm bench` (tools/bench/run.ts). */
export function runSettings<Case extends string>(cases: readonly Case[]) {
  const profile = text('BENCH_PROFILE');
  const json = text('BENCH_JSON');
  return {
    ...runLength(10),
    connections: numberFromEnv('BENCH_CONNECTIONS', 10, { whole: true }),
    /** Requests per second offered to every case, arriving evenly (0: as many as the server answers). */
    rate: numberFromEnv('BENCH_RATE', 0, { zero: true }),
    products: numberFromEnv('BENCH_PRODUCTS', 100_000, { whole: true }),
    /** Simulating orders over the network takes long: the PostgreSQL store has none unless asked. */
    orders: {
      sqlite: numberFromEnv('BENCH_ORDERS', 100_000, { zero: true, whole: true }),
      postgres: numberFromEnv('BENCH_ORDERS', 0, { zero: true, whole: true }),
    },
    postgresUrl: databaseUrl(),
    serverCpus: serverCpusFromEnv(),
    /** Where the CPU profiles of the servers over each measured run go. */
    profileDir: profile === undefined ? undefined : path.resolve(profile),
    jsonFile: json === undefined ? undefined : path.resolve(json),
    cases: casesFromEnv(cases),
    webhooks: webhookSettings(),
  };
}

/** `pnpm bench:compare` (tools/bench/compare.ts): short slices at an even pace. */
export function compareSettings<Case extends string>(cases: readonly Case[]) {
  const baseline = text('BENCH_BASELINE');
  return {
    ...runLength(5, () => 3),
    rounds: numberFromEnv('BENCH_ROUNDS', 8, { whole: true }),
    rate: numberFromEnv('BENCH_RATE', 600),
    connections: numberFromEnv('BENCH_CONNECTIONS', 10, { whole: true }),
    products: numberFromEnv('BENCH_PRODUCTS', 10_000, { whole: true }),
    postgresUrl: databaseUrl(),
    /** Another worktree, whose server is side A. */
    baseline: baseline === undefined ? undefined : path.resolve(baseline),
    serverCpus: serverCpusFromEnv(),
    cases: casesFromEnv(cases) ?? [...cases],
  };
}

/** `pnpm bench:fleet` (tools/bench/fleet.ts). */
export function fleetSettings<Case extends string>(cases: readonly Case[], cores: number) {
  const url = databaseUrl();
  if (!url) throw new Error('BENCH_DATABASE_URL is required: the fleet runs on PostgreSQL (a user that may create databases)');
  const counts = (text('BENCH_FLEET_PROCESSES') ?? `1,2,${cores}`).split(',').map((count) => {
    const value = Number(count.trim());
    if (!Number.isInteger(value) || value < 1 || value > 64) throw new Error(`BENCH_FLEET_PROCESSES takes counts from 1 to 64, not "${count}"`);
    return value;
  });
  return {
    databaseUrl: url,
    /** Counts of server processes (WEB_CONCURRENCY), each measured in turn, the fewest first. */
    processes: [...new Set(counts)].sort((a, b) => a - b),
    ...runLength(10),
    connections: numberFromEnv('BENCH_CONNECTIONS', 20, { whole: true }),
    products: numberFromEnv('BENCH_PRODUCTS', 10_000, { whole: true }),
    cases: casesFromEnv(cases) ?? [...cases],
  };
}

/**
 * The store API's bench server (tools/bench/server.ts), from the environment `pnpm bench` and
 * `pnpm bench:compare` start it with; a baseline worktree's server.ts reads the same names.
 */
export function storeServerSettings() {
  const dataDir = text('BENCH_DATA_DIR');
  return {
    products: numberFromEnv('BENCH_PRODUCTS', 100_000, { whole: true }),
    orders: numberFromEnv('BENCH_ORDERS', 100_000, { zero: true, whole: true }),
    postgresUrl: databaseUrl(),
    /** Where the SQLite store is kept between runs (`data/bench`). */
    keptDir: dataDir === undefined ? undefined : path.resolve(dataDir),
    /** The server keeps its Prometheus metrics (as with METRICS_PORT), so that their cost is measured too. */
    metrics: process.env.BENCH_METRICS === '1',
  };
}

/** tools/bench/slow-network.ts. */
export function slowNetworkSettings() {
  const [host = '127.0.0.1', port = '5432'] = (text('BENCH_PROXY_TARGET') ?? '127.0.0.1:5432').split(':');
  return {
    delayMs: numberFromEnv('BENCH_NETWORK_DELAY_MS', 1, { zero: true }),
    port: numberFromEnv('BENCH_PROXY_PORT', 5433, { whole: true }),
    target: { host, port: Number(port) },
  };
}

/** `pnpm bench:primary` (tools/bench/primary-cost.ts): the operations measured, each this many times. */
export function primaryCostSettings() {
  const url = databaseUrl();
  if (!url) throw new Error('BENCH_DATABASE_URL is required: the primary measured is a PostgreSQL server on this machine');
  return {
    databaseUrl: url,
    products: numberFromEnv('BENCH_PRODUCTS', 2_000, { whole: true }),
    orders: numberFromEnv('BENCH_ORDERS', 2_000, { whole: true }),
    deliveries: numberFromEnv('BENCH_WEBHOOK_DELIVERIES', 5_000, { whole: true }),
    /** Requests of each read (products.get, products.list). */
    reads: numberFromEnv('BENCH_READS', 5_000, { whole: true }),
    /** Whether to start a streaming replica of the server (pg_basebackup) and measure a list read there: `BENCH_REPLICA=0` skips it. */
    replica: process.env.BENCH_REPLICA !== '0',
  };
}

/** `pnpm bench:partitions`: the rows of each table per simulated day, and the days filled. */
export function partitionSettings() {
  const url = databaseUrl();
  if (!url) throw new Error("BENCH_DATABASE_URL is required: partitions are PostgreSQL's");
  return {
    databaseUrl: url,
    rowsPerDay: numberFromEnv('BENCH_PARTITION_ROWS_PER_DAY', 3_000, { whole: true }),
    days: numberFromEnv('BENCH_PARTITION_DAYS', 36, { whole: true }),
  };
}
