import { execFileSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../packages/server/src/app';
import { openReplicas } from '../../packages/server/src/db/connection';
import { engineOfHandle } from '../../packages/server/src/db/engine';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { createDispatcher } from '../../packages/server/src/delivery/dispatcher';
import { createProduct, updateProductContent } from '../../packages/server/src/domain/catalog/products/changes';
import type { Actor } from '../../packages/server/src/domain/common/actor';
import { anyVersion } from '../../packages/server/src/domain/common/actor';
import { simulateStore } from '../../packages/server/src/seeds/simulation/run';
import { createServices, type Services } from '../../packages/server/src/services/container';
import { type RunningReplica, startReplica } from '../testbed/replica';
import { createBenchStore, installBenchApp } from './fixtures';
import { cpuTimeOfTree, machineCpu, parentOf } from './proc';
import { fixed, printTable, runScript } from './report';
import { startServer } from './servers';
import { primaryCostSettings } from './settings';
import { type BenchRole, openBenchRole, printStatements, type StatementCost } from './statements';
import { productPaths } from './store-requests';
import { walBytesSince, walPosition } from './wal';
import { burst, pending, storesWithSubscriptions, undispatched, until } from './webhooks';

/**
 * What each kind of write costs the PostgreSQL primary (issue 32's capacity model, docs/scaling.md):
 * the CPU of every PostgreSQL process on this machine (backends, WAL writer, checkpointer: from
 * /proc) and the WAL written (`pg_current_wal_lsn()` before and after), per product created, per
 * product changed, per simulated order (its customer, payment, fulfilment, stock and events, as
 * `svc simulate` makes them) and per webhook delivery (fan-out, claim, attempt recorded). The writes
 * run in this process through the domain, as the API's handlers call it. The reads are requests to
 * the API served from this process (`GET /products/{id}` and a first page of 25), with their bearer
 * check: the token's statement spends the installation's quota, a write the primary keeps. The
 * API's own CPU per request is `pnpm bench`'s. Run it on a quiet machine with PostgreSQL on this
 * machine. Each case also names its costliest statements (`pg_stat_statements`, reset before the
 * case): the bench runs as a role made for the run, so they are its own, whoever else uses the server.
 */

interface Cost {
  readonly operation: string;
  readonly count: number;
  readonly primaryCpuMs: number;
  readonly walBytes: number;
  readonly seconds: number;
  /** The CPU of the replica the bench started, for the cases read there. */
  readonly replicaCpuMs?: number;
  /** Its costliest statements. */
  readonly statements: readonly StatementCost[];
}

/** Statements shown per case. */
const TOP_STATEMENTS = 8;

/**
 * The postmasters on this machine: the processes named postgres whose parent is not one. Each one's
 * tree is its server (backends, WAL writer, checkpointer…), counted once: the backends are named
 * postgres too, so summing every such process's tree would count each backend twice.
 */
function postmasters(): number[] {
  const out = execFileSync('pgrep', ['-x', 'postgres'], { encoding: 'utf8' });
  const pids = out.split('\n').filter(Boolean).map(Number);
  const named = new Set(pids);
  return pids.filter((pid) => !named.has(parentOf(pid) ?? 0));
}

/** The CPU µs so far of every PostgreSQL server on this machine but the replica the bench started (its postmaster). */
const primaryCpuUs = (replica?: number) =>
  postmasters()
    .filter((pid) => pid !== replica)
    .reduce((sum, pid) => sum + cpuTimeOfTree(pid).total, 0);

/** The primary's CPU and WAL over `work`, which does `count` operations (and the replica's CPU, given its postmaster). */
async function costOf(role: BenchRole, operation: string, count: number, work: () => Promise<void>, replica?: number): Promise<Cost> {
  const { db } = role;
  await role.reset();
  const wal = await walPosition(db);
  const cpu = primaryCpuUs(replica);
  const replicaCpu = replica === undefined ? 0 : cpuTimeOfTree(replica).total;
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const primaryCpuMs = (primaryCpuUs(replica) - cpu) / 1000 / count;
  const statements = await role.top(TOP_STATEMENTS);
  const cost = { operation, count, primaryCpuMs, walBytes: (await walBytesSince(db, wal)) / count, seconds, statements };
  return replica === undefined ? cost : { ...cost, replicaCpuMs: (cpuTimeOfTree(replica).total - replicaCpu) / 1000 / count };
}

/** The API of `services` served from this process, to an app installed with `scopes`: `fetch` a path as it until `work` is done. */
async function withApi<T>(
  services: Services,
  storeId: string,
  scopes: string[],
  work: (get: (path: string) => Promise<Response>, installationId: string) => Promise<T>,
): Promise<T> {
  const { tokens } = await installBenchApp(services, storeId, 'Primary cost reader', scopes);
  const server = createApp({ config: { validateResponses: false, exposeInternalErrors: false }, services }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    return await work((path) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${tokens.access_token}` } }), tokens.installation_id);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

/** `count` requests of `path()`, one after the other, each answered 200. */
async function requestsOf(get: (path: string) => Promise<Response>, path: () => string, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const response = await get(path());
    if (response.status !== 200) throw new Error(`${path()} answered ${response.status}`);
    await response.arrayBuffer();
  }
}

const actorOf = (services: Services, storeId: string): Actor => ({ storeId, installationId: null, now: services.clock.now() });

/** `count` requests of each read, one after the other, to the API served from this process by an installed app. */
function readCosts(role: BenchRole, services: Services, storeId: string, ids: readonly number[], count: number): Promise<Cost[]> {
  const paths = productPaths(storeId, ids);
  return withApi(services, storeId, ['products:read'], async (get) => {
    await requestsOf(get, paths.get, count); // every connection of the pool prepares its statements first
    return [
      await costOf(role, 'GET /products/{id} (with its bearer check)', count, () => requestsOf(get, paths.get, count)),
      await costOf(role, 'GET /products?limit=25 (with its bearer check)', count, () => requestsOf(get, paths.list, count)),
    ];
  });
}

/**
 * With a streaming replica of the server (started here: pg_basebackup, a postmaster of its own), what
 * a list read there costs the primary (the bearer check, with the store's write positions in its
 * round trip) and the replica (the list), and what recording an installation's write position costs
 * the primary (docs/decisions/0078-read-replicas.md). Skipped, saying why, where no replica starts.
 */
async function replicaCosts(role: BenchRole, databaseUrl: string, storeId: string, ids: readonly number[], count: number): Promise<Cost[]> {
  let replica: RunningReplica;
  try {
    replica = await startReplica(databaseUrl);
  } catch (error) {
    console.log(`(the replica cases are skipped: no replica started: ${String(error).split('\n')[0]})`);
    return [];
  }
  const url = new URL(role.url);
  url.hostname = '127.0.0.1';
  url.port = new URL(replica.url).port;
  const replicas = openReplicas({ database: { replicaUrls: [url.toString()], replicaMaxLagMs: 5000 } }, role.db, engineOfHandle(role.db).pools, (line) =>
    console.log(line),
  );
  const services = createServices({ db: role.db, engine: engineOfHandle(role.db), rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 }, replicas });
  const paths = productPaths(storeId, ids);
  try {
    const postmaster = replica.postmasterPid();
    await replica.catchUp();
    return await withApi(services, storeId, ['products:read'], async (get, installationId) => {
      // Until the polls have seen the replica current: from then on this reader's lists are read there.
      await until(async () => ((await (await get(paths.list())).json()) as { meta: { consistency: string } }).meta.consistency === 'replica_keyset');
      await requestsOf(get, paths.list, count);
      return [
        await costOf(role, 'GET /products?limit=25 read on a replica', count, () => requestsOf(get, paths.list, count), postmaster),
        await costOf(
          role,
          "an installation's write position recorded (each write, with replicas)",
          count,
          async () => {
            for (let index = 0; index < count; index += 1) await replicas.noteWrite(storeId, installationId);
          },
          postmaster,
        ),
      ];
    });
  } finally {
    await replicas.close();
    await replica.remove();
  }
}

async function main(): Promise<void> {
  const settings = primaryCostSettings();
  const role = await openBenchRole(settings.databaseUrl, 'svc_bench_primary');
  const { db } = role;
  const receiver = await startServer({ script: 'receiver.ts', onServerCpus: false });
  try {
    await migrateToLatest(db);
    const services = createServices({
      db,
      engine: engineOfHandle(db),
      rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 },
      webhooks: { environment: 'development' },
    });
    const { store } = await createBenchStore(services, 'Primary cost bench');
    const costs: Cost[] = [];
    const ids: number[] = [];
    costs.push(
      await costOf(role, 'product created', settings.products, async () => {
        for (let index = 0; index < settings.products; index += 1) {
          const product = await createProduct(db, actorOf(services, store.id), {
            name: `Primary cost oud ${index}`,
            product_kind: 'physical',
            price: '120.00',
          });
          ids.push(product.id);
        }
      }),
    );
    costs.push(
      await costOf(role, 'product changed', ids.length, async () => {
        for (const [index, id] of ids.entries())
          await updateProductContent(db, actorOf(services, store.id), id, anyVersion, { name: `Renamed oud ${index}`, status: 'active' });
      }),
    );
    await db.raw('analyze');
    costs.push(
      await costOf(role, 'order (its life, simulated)', settings.orders, async () => {
        const summary = await simulateStore(services, { storeId: store.id, days: 7, orders: settings.orders, seed: 1 });
        if (summary.orders !== settings.orders) throw new Error(`the simulation placed ${summary.orders} orders of ${settings.orders}`);
      }),
    );
    costs.push(...(await readCosts(role, services, store.id, ids, settings.reads)));
    const subscriptions = await storesWithSubscriptions(services, receiver.base);
    const storeIds = subscriptions.map((subscription) => subscription.storeId);
    await burst(services, storeIds, settings.deliveries, Date.now());
    const dispatcher = createDispatcher(services);
    costs.push(
      await costOf(role, 'webhook delivery', settings.deliveries, async () => {
        dispatcher.start();
        await until(async () => (await undispatched(services)) === 0 && (await pending(services)) === 0);
        await dispatcher.stop();
      }),
    );
    // Last: pg_basebackup's checkpoint would make the cases after it write every page they first
    // touch whole again (full-page images), which is the checkpoint's cost, not theirs.
    if (settings.replica) costs.push(...(await replicaCosts(role, settings.databaseUrl, store.id, ids, settings.reads)));
    const machine = machineCpu();
    printTable(
      [
        { title: 'operation', align: 'left' },
        { title: 'count', align: 'right' },
        { title: 'primary CPU ms each', align: 'right' },
        { title: 'WAL bytes each', align: 'right' },
        { title: 'replica CPU ms each', align: 'right' },
        { title: 'seconds', align: 'right' },
      ],
      costs.map((cost) => [
        cost.operation,
        String(cost.count),
        fixed(cost.primaryCpuMs, 3),
        String(Math.round(cost.walBytes)),
        cost.replicaCpuMs === undefined ? '' : fixed(cost.replicaCpuMs, 3),
        fixed(cost.seconds, 1),
      ]),
    );
    for (const cost of costs) printStatements(cost.operation, cost.count, cost.statements);
    if (machine) console.log(`(the machine's CPU: ${machine.busy} busy of ${machine.total} ticks since boot; run this on a quiet machine)`);
  } finally {
    await receiver.stop();
    await role.drop();
  }
}

runScript(main, 'bench:primary: ');
