import { execFileSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../packages/server/src/app';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { createProduct, updateProductContent } from '../../packages/server/src/domain/catalog/products/changes';
import type { Actor } from '../../packages/server/src/domain/common/actor';
import { anyVersion } from '../../packages/server/src/domain/common/actor';
import { createDispatcher } from '../../packages/server/src/jobs/webhook-dispatcher';
import { simulateStore } from '../../packages/server/src/seeds/simulation/run';
import { createServices, type Services } from '../../packages/server/src/services/container';
import { createBenchStore, installBenchApp, type Knex, scratchSchema } from './fixtures';
import { cpuTimeOfTree, machineCpu } from './proc';
import { fixed, printTable, runScript } from './report';
import { startServer } from './servers';
import { primaryCostSettings } from './settings';
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
 * machine.
 */

interface Cost {
  readonly operation: string;
  readonly count: number;
  readonly primaryCpuMs: number;
  readonly walBytes: number;
  readonly seconds: number;
}

/** The PostgreSQL server's processes on this machine: every process named postgres. */
function postgresPids(): number[] {
  const out = execFileSync('pgrep', ['-x', 'postgres'], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean).map(Number);
}

const primaryCpuUs = () => postgresPids().reduce((sum, pid) => sum + cpuTimeOfTree(pid).total, 0);

/** The primary's CPU and WAL over `work`, which does `count` operations. */
async function costOf(db: Knex, operation: string, count: number, work: () => Promise<void>): Promise<Cost> {
  const wal = await walPosition(db);
  const cpu = primaryCpuUs();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const primaryCpuMs = (primaryCpuUs() - cpu) / 1000 / count;
  return { operation, count, primaryCpuMs, walBytes: (await walBytesSince(db, wal)) / count, seconds };
}

const actorOf = (services: Services, storeId: string): Actor => ({ storeId, installationId: null, now: services.clock.now() });

/** `count` requests of each read, one after the other, to the API served from this process by an installed app. */
async function readCosts(db: Knex, services: Services, storeId: string, ids: readonly number[], count: number): Promise<Cost[]> {
  const { tokens } = await installBenchApp(services, storeId, 'Primary cost reader', ['products:read']);
  const server = createApp({ config: { validateResponses: false, exposeInternalErrors: false }, services }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const paths = productPaths(storeId, ids);
  const requests = async (path: () => string) => {
    for (let index = 0; index < count; index += 1) {
      const response = await fetch(`${base}${path()}`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      if (response.status !== 200) throw new Error(`${path()} answered ${response.status}`);
      await response.arrayBuffer();
    }
  };
  try {
    await requests(paths.get); // every connection of the pool prepares its statements first
    return [
      await costOf(db, 'GET /products/{id} (with its bearer check)', count, () => requests(paths.get)),
      await costOf(db, 'GET /products?limit=25 (with its bearer check)', count, () => requests(paths.list)),
    ];
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

async function main(): Promise<void> {
  const settings = primaryCostSettings();
  const { db, drop } = await scratchSchema(settings.databaseUrl, 'svc_bench_primary');
  const receiver = await startServer({ script: 'receiver.ts', onServerCpus: false });
  try {
    await migrateToLatest(db);
    const services = createServices({ db, rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 }, webhooks: { environment: 'development' } });
    const { store } = await createBenchStore(services, 'Primary cost bench');
    const costs: Cost[] = [];
    const ids: number[] = [];
    costs.push(
      await costOf(db, 'product created', settings.products, async () => {
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
      await costOf(db, 'product changed', ids.length, async () => {
        for (const [index, id] of ids.entries())
          await updateProductContent(db, actorOf(services, store.id), id, anyVersion, { name: `Renamed oud ${index}`, status: 'active' });
      }),
    );
    await db.raw('analyze');
    costs.push(
      await costOf(db, 'order (its life, simulated)', settings.orders, async () => {
        const summary = await simulateStore(services, { storeId: store.id, days: 7, orders: settings.orders, seed: 1 });
        if (summary.orders !== settings.orders) throw new Error(`the simulation placed ${summary.orders} orders of ${settings.orders}`);
      }),
    );
    costs.push(...(await readCosts(db, services, store.id, ids, settings.reads)));
    const subscriptions = await storesWithSubscriptions(services, receiver.base);
    const storeIds = subscriptions.map((subscription) => subscription.storeId);
    await burst(services, storeIds, settings.deliveries, Date.now());
    const dispatcher = createDispatcher(services);
    costs.push(
      await costOf(db, 'webhook delivery', settings.deliveries, async () => {
        dispatcher.start();
        await until(async () => (await undispatched(services)) === 0 && (await pending(services)) === 0);
        await dispatcher.stop();
      }),
    );
    const machine = machineCpu();
    printTable(
      [
        { title: 'operation', align: 'left' },
        { title: 'count', align: 'right' },
        { title: 'primary CPU ms each', align: 'right' },
        { title: 'WAL bytes each', align: 'right' },
        { title: 'seconds', align: 'right' },
      ],
      costs.map((cost) => [cost.operation, String(cost.count), fixed(cost.primaryCpuMs, 3), String(Math.round(cost.walBytes)), fixed(cost.seconds, 1)]),
    );
    if (machine) console.log(`(the machine's CPU: ${machine.busy} busy of ${machine.total} ticks since boot; run this on a quiet machine)`);
  } finally {
    await receiver.stop();
    await db.destroy();
    await drop();
  }
}

runScript(main, 'bench:primary: ');
