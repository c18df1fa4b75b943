import os from 'node:os';
import { systemClock } from '../../packages/server/src/core/clock';
import { createDatabase } from '../../packages/server/src/db/connection';
import { engineOfHandle } from '../../packages/server/src/db/engine';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { createSubscription } from '../../packages/server/src/domain/webhooks/subscriptions/changes';
import { createServices } from '../../packages/server/src/services/container';
import { createBenchStore, installBenchApp } from '../bench/fixtures';
import { machineSummary, printTable, runScript } from '../bench/report';
import { checkBuilt } from '../bench/servers';
import { type DrillCluster, missingPrograms, quiet, startCluster } from './cluster';
import { type FaultContext, FLEET_FAULTS, within } from './faults';
import { Fleet } from './fleet';
import { describeFigures, type EventFigures, eventsOf, figuresOf, Ledger, type LoadFigures, problemsOf } from './ledger';
import { drillMigration } from './migration';
import { LogCursor, metricsOf, readinessOf } from './observe';
import { type DrillPlan, DrillUsageError, FAULTS, type FaultName, planOf, USAGE } from './plan';
import { type Receiver, startReceiver } from './receiver';
import { startTraffic, type Target } from './traffic';

/**
 * `pnpm drill`: the fault drills of docs/deploy.md's "When something fails", run the same way each
 * time on database servers of the drill's own (tools/drill/cluster.ts) with the built server
 * (`pnpm build` first). Each fault runs under writes and reads; the drill prints what was sent,
 * acknowledged and found afterwards, which 5xx came, whether every event reached the receiver, and
 * what an operator saw meanwhile. It holds each to: no acknowledged write lost, no 5xx but 503 with
 * Retry-After, every event delivered; it exits 1 when one falls short. Not part of `pnpm test`.
 */

/** How long the drill waits for the events of a fault to reach the receiver (a killed instance's leases last 45 s). */
const DELIVERY_WAIT_MS = 150_000;

/** Load before the first fault, not counted. */
const WARM_UP_MS = 10_000;

interface Verdict {
  readonly fault: FaultName;
  readonly load?: LoadFigures;
  readonly events?: EventFigures;
  readonly problems: readonly string[];
}

interface Drill {
  readonly cluster: DrillCluster;
  readonly fleet: Fleet;
  readonly receiver: Receiver;
  readonly target: Target;
  readonly plan: DrillPlan;
}

const say = (line: string) => console.log(`  ${line}`);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The store the load writes to, an app installed in it, and its subscription to product.created at the receiver. */
async function prepare(cluster: DrillCluster, receiver: Receiver): Promise<Target> {
  const db = createDatabase({ databaseUrl: cluster.primaryUrl, dataDir: '' }, { log: quiet });
  try {
    await migrateToLatest(db);
    const services = createServices({ db, engine: engineOfHandle(db), clock: systemClock, rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 } });
    const { store } = await createBenchStore(services, 'Drill Store');
    const { tokens } = await installBenchApp(services, store.id, 'Drill App', ['products:read', 'products:write']);
    await createSubscription(
      db,
      services,
      { storeId: store.id, installationId: tokens.installation_id, scopes: new Set(['products:read']), now: Date.now() },
      { endpoint_url: receiver.url, event_types: ['product.created'] },
    );
    return { storeId: store.id, token: tokens.access_token };
  } finally {
    await db.destroy();
  }
}

/** One fault of the fleet under load: calm, the fault, calm again; then what was written and delivered. */
async function drillFleetFault(drill: Drill, fault: Exclude<FaultName, 'migration-019'>): Promise<Verdict> {
  const { cluster, fleet, receiver, target, plan } = drill;
  const ledger = new Ledger();
  const prefix = `drill-${fault}-${Date.now().toString(36)}`;
  const logs = new LogCursor();
  logs.mark(fleet.instances);
  const seen: string[] = [];
  const look = async (metrics: readonly string[]) => {
    for (const instance of fleet.instances) {
      seen.push(await readinessOf(instance));
      seen.push(...(await metricsOf(instance, metrics)));
    }
  };
  const [{ at: since } = { at: 0 }] = await cluster.query<{ at: string }>('select (extract(epoch from clock_timestamp()) * 1000)::bigint as at');
  const traffic = startTraffic(fleet, target, plan, ledger, prefix);
  await sleep(plan.calmSeconds * 1000);
  const context: FaultContext = { cluster, fleet, receiver, plan, say, look };
  const trouble: string[] = [];
  await FLEET_FAULTS[fault](context).catch((error: unknown) =>
    trouble.push(`the drill could not inject it: ${error instanceof Error ? error.message : String(error)}`),
  );
  const ended = performance.now();
  await sleep(plan.calmSeconds * 1000);
  await traffic.stop();
  seen.push(...logs.linesSince(fleet.instances));
  const found = new Set(
    (await cluster.query<{ name: string }>('select name from products where store_id = ? and name like ?', [target.storeId, `${prefix}-%`])).map(
      (row) => row.name,
    ),
  );
  const load = figuresOf(ledger, found);
  const recorded = (
    await cluster.query<{ id: string }>("select id from outbox_events where store_id = ? and type = 'product.created' and occurred_at >= ?", [
      target.storeId,
      Number(since),
    ])
  ).map((row) => row.id);
  await within(DELIVERY_WAIT_MS, async () => recorded.every((id) => receiver.received.has(id)));
  const events = eventsOf(recorded, receiver.received, performance.now() - ended);
  for (const line of describeFigures(load, events)) say(line);
  say('the operator sees:');
  for (const line of seen) say(`  ${line}`);
  const problems = [...trouble, ...problemsOf(load, events)];
  say(problems.length === 0 ? 'PASS' : `FAIL: ${problems.join('; ')}`);
  return { fault, load, events, problems };
}

async function drillMigrationFault(cluster: DrillCluster, plan: DrillPlan): Promise<Verdict> {
  const { lines, problems } = await drillMigration(cluster, plan.migrationRows, say).catch((error: unknown) => ({
    lines: [] as string[],
    problems: [`the drill could not run it: ${error instanceof Error ? error.message : String(error)}`],
  }));
  for (const line of lines) say(line);
  say(problems.length === 0 ? 'PASS' : `FAIL: ${problems.join('; ')}`);
  return { fault: 'migration-019', problems };
}

function printSummary(verdicts: readonly Verdict[]): void {
  console.log('');
  printTable(
    [
      { title: 'fault', align: 'left' },
      { title: 'writes sent', align: 'right' },
      { title: 'acknowledged', align: 'right' },
      { title: 'found', align: 'right' },
      { title: 'lost', align: 'right' },
      { title: '503+Retry-After', align: 'right' },
      { title: 'other 5xx', align: 'right' },
      { title: 'read p99 ms', align: 'right' },
      { title: 'events missing', align: 'right' },
      { title: 'verdict', align: 'left' },
    ],
    verdicts.map(({ fault, load, events, problems }) => [
      fault,
      ...(load
        ? [
            String(load.writes.sent),
            String(load.writes.acknowledged),
            String(load.writes.found),
            String(load.writes.lost.length),
            String(load.serverErrors.unavailableWithRetryAfter),
            String(Object.values(load.serverErrors.others).reduce((sum, count) => sum + count, 0)),
            String(load.reads.p99),
          ]
        : ['', '', '', '', '', '', '']),
      events ? String(events.missing.length) : '',
      problems.length === 0 ? 'PASS' : 'FAIL',
    ]),
  );
}

async function main(): Promise<void> {
  let plan: DrillPlan | undefined;
  try {
    plan = planOf(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof DrillUsageError)) throw error;
    console.error(`pnpm drill: ${error.message}\n${USAGE}`);
    process.exit(2);
  }
  if (!plan) {
    console.log(USAGE);
    return;
  }
  checkBuilt();
  const missing = missingPrograms();
  if (missing) throw new Error(missing);
  const [load1, load5] = os.loadavg();
  console.log(
    `Fault drill: ${machineSummary()}, load average ${load1?.toFixed(2)} / ${load5?.toFixed(2)}; ${plan.instances} instances, ${plan.writesPerSecond} writes/s and ${plan.readsPerSecond} reads/s, faults of ${plan.faultSeconds} s with ${plan.calmSeconds} s of load before and after`,
  );
  const cluster = await startCluster(say);
  const receiver = await startReceiver();
  const fleet = new Fleet({ pooledUrl: cluster.pooledUrl, primaryUrl: cluster.primaryUrl, replicaUrl: cluster.replica.url });
  const verdicts: Verdict[] = [];
  let cleaning: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      await fleet.stop();
      await receiver.close();
      await cluster.remove();
    })());
  // Interrupted, the drill still takes down what it started: a frozen replica left behind would hold its port and memory.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      console.error(`pnpm drill: ${signal}: stopping the instances and removing the drill's database servers …`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
  try {
    const target = await prepare(cluster, receiver);
    for (let index = 0; index < plan.instances; index += 1) await fleet.add();
    say(`${plan.instances} instances of the built server, through PgBouncer, reading lists from the replica`);
    // New processes compile their code and open their pools under the first requests: that is not a fault's.
    const warmUp = startTraffic(fleet, target, plan, new Ledger(), 'drill-warm-up');
    await sleep(WARM_UP_MS);
    await warmUp.stop();
    say(`warmed up with ${WARM_UP_MS / 1000} s of the same load, not counted`);
    for (const fault of plan.faults) {
      console.log('');
      console.log(`${fault}: ${FAULTS[fault]}`);
      verdicts.push(
        fault === 'migration-019' ? await drillMigrationFault(cluster, plan) : await drillFleetFault({ cluster, fleet, receiver, target, plan }, fault),
      );
    }
  } finally {
    await cleanUp();
  }
  printSummary(verdicts);
  const [after1] = os.loadavg();
  console.log(`Load average ${after1?.toFixed(2)} at the end.`);
  if (verdicts.some((verdict) => verdict.problems.length > 0)) process.exitCode = 1;
}

runScript(main, 'pnpm drill could not run: ');
