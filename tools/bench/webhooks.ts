import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDatabase } from '../../packages/server/src/db/connection';
import { engineOfHandle } from '../../packages/server/src/db/engine';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { createDispatcher, type Dispatcher } from '../../packages/server/src/delivery/dispatcher';
import { fanOut } from '../../packages/server/src/delivery/fan-out';
import { replayEvents } from '../../packages/server/src/domain/webhooks/replay';
import { createSubscription } from '../../packages/server/src/domain/webhooks/subscriptions/changes';
import { createServices, type Services } from '../../packages/server/src/services/container';
import { type DomainEvent, recordEvent } from '../../packages/server/src/services/outbox';
import { until as poll } from '../testbed/until';
import { createBenchStore, installBenchApp, type Knex, scratchSchema } from './fixtures';
import { runScript } from './report';
import { type ServerUnderTest, startServer } from './servers';
import { casesFromEnv, webhookSettings } from './settings';
import { percentile } from './stats';

/**
 * The webhook cases of `pnpm bench`: one dispatcher with the server's defaults (32 attempts at once,
 * a poll of 1 s when idle) on SQLite, or on PostgreSQL in a schema of its own (BENCH_DATABASE_URL),
 * delivering to a receiver on this machine in a process of its own.
 *
 * Events are spread over 8 stores with one subscription each, so that the limit of 4 attempts per
 * subscription at once is not what is measured.
 * - `webhooks.deliveries`: BENCH_WEBHOOK_DELIVERIES events (10,000) in the outbox when the worker
 *   starts: the backlog's drain rate for one worker, deliveries per second from fan-out to the last
 *   recorded outcome.
 * - `webhooks.outbox lag`: first, single events committed one at a time while the worker is idle
 *   (each once the one before was delivered): the time from each commit to its recorded delivery
 *   (median, p99), which is the worker's wake-up, not its poll. Then a burst of BENCH_WEBHOOK_BURST
 *   events (10,000) written in one transaction while the worker runs: how long until the last was
 *   fanned out and delivered, and the time from each event to its delivery (p50, p99, max).
 */

export const WEBHOOK_CASES = ['webhooks.deliveries', 'webhooks.recovery', 'webhooks.outbox lag'] as const;
export type WebhookCase = (typeof WEBHOOK_CASES)[number];

export interface WebhookFigures {
  readonly name: string;
  readonly figures: Record<string, number>;
}

const SUBSCRIPTIONS = 8;
/** Delivered before anything is measured. */
const WARM_UP_EVENTS = 1000;
/** Single events committed one after the other for the commit-to-delivery figure. */
const SINGLE_COMMITS = 200;

/** A product.created-sized event (about 1 KB). A stand-in of about a real product's size: the bench measures delivery, which never reads the payload. */
function productEvent(storeId: string, index: number, now: number): DomainEvent {
  return {
    type: 'product.created',
    storeId,
    installationId: null,
    occurredAt: now,
    data: { product: { id: index + 1, name: `Bench product ${index}`, description: 'x'.repeat(700), status: 'inactive', price: '0.00' } },
  } as unknown as DomainEvent;
}

interface BenchSubscription {
  readonly storeId: string;
  readonly installationId: string;
  readonly subscriptionId: string;
}

/** SUBSCRIPTIONS stores, each with an app installed and subscribed to product.created at the receiver. */
export async function storesWithSubscriptions(services: Services, receiver: string): Promise<BenchSubscription[]> {
  const subscriptions: BenchSubscription[] = [];
  for (let index = 0; index < SUBSCRIPTIONS; index += 1) {
    const { store } = await createBenchStore(services, `Webhook bench ${index}`);
    const { tokens } = await installBenchApp(services, store.id, `Bench receiver ${index}`, ['products:read']);
    const installationId = tokens.installation_id;
    const { row } = await createSubscription(
      services.db,
      services,
      { storeId: store.id, installationId, scopes: new Set(['products:read']), now: services.clock.now() },
      { endpoint_url: `${receiver}/hooks/${index}`, event_types: ['product.created'] },
    );
    subscriptions.push({ storeId: store.id, installationId, subscriptionId: row.id });
  }
  return subscriptions;
}

/** Writes `count` events spread over the stores in one transaction, as a burst of changes commits. */
export async function burst(services: Services, storeIds: readonly string[], count: number, at: number): Promise<void> {
  await services.db.transaction(async (trx) => {
    for (let index = 0; index < count; index += 1) await recordEvent(trx, productEvent(storeIds[index % storeIds.length] as string, index, at));
  });
}

/** Waits, asking every `everyMs`, until `condition` holds; an error it throws ends the bench. */
export const until = (condition: () => Promise<boolean>, everyMs = 20) => poll(condition, { everyMs, rethrow: true });

/**
 * Single events, each committed on its own once the one before is delivered (so the worker waits
 * idle when it comes): the milliseconds from each commit to its delivery's recorded outcome.
 */
async function commitToDelivery(services: Services, storeIds: readonly string[], count: number): Promise<number[]> {
  const lags: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const [id] = await services.db.transaction((trx) => recordEvent(trx, productEvent(storeIds[index % storeIds.length] as string, index, Date.now())));
    const committed = Date.now();
    let finished: number | undefined;
    await until(async () => {
      const row = await services.db('webhook_deliveries').where({ event_id: id, state: 'succeeded' }).first<{ finished_at: number } | undefined>('finished_at');
      finished = row?.finished_at;
      return finished !== undefined;
    }, 2);
    lags.push(Math.max(0, (finished as number) - committed));
  }
  return lags.sort((a, b) => a - b);
}

interface BenchDb {
  readonly db: Knex;
  readonly name: string;
  readonly close: () => Promise<void>;
}

/** SQLite in a temporary directory, or PostgreSQL in a schema made for the run and dropped after it. */
async function benchDatabase(databaseUrl: string | undefined): Promise<BenchDb> {
  if (!databaseUrl) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-webhooks-'));
    const db = createDatabase({ databaseUrl: undefined, dataDir: dir });
    return {
      db,
      name: 'SQLite',
      close: async () => {
        await db.destroy();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const { db, drop } = await scratchSchema(databaseUrl, 'svc_bench_webhooks');
  return {
    db,
    name: 'PostgreSQL',
    close: async () => {
      await db.destroy();
      await drop();
    },
  };
}

// Indexed probes, not counts: the bench asks every 20 ms, and its own queries are not what is measured.
export const pending = async (services: Services) => ((await services.db('webhook_deliveries').where({ state: 'pending' }).first('id')) ? 1 : 0);
export const undispatched = async (services: Services) => ((await services.db('outbox_events').whereNull('dispatched_at').first('id')) ? 1 : 0);

/**
 * `webhooks.recovery`, what every recovery is: one subscription's backlog. `count` events of its
 * store are written while it is paused (so none is fanned out to it), then, active again, they are
 * replayed to it in one request and one worker drains them, at most the per-subscription limit of
 * attempts at once. Measured: the drain rate over the whole, over its first 5 s and its last quarter
 * (a rate that decays as the backlog shrinks shows there), and the median time from the replay's
 * commit to each delivery's recorded success.
 */
interface RecoveryFigures extends Record<string, number> {
  deliveries: number;
  seconds: number;
  deliveriesPerSecond: number;
  firstFiveSecondsPerSecond: number;
  lastQuarterPerSecond: number;
  commitToDeliveryP50Ms: number;
  commitToDeliveryP99Ms: number;
  cpuMsPerDelivery: number;
}

async function recoveryDrain(services: Services, subscription: BenchSubscription, count: number, dispatcher: Dispatcher): Promise<RecoveryFigures> {
  const { db } = services;
  const writtenAt = Date.now() - 60_000;
  await db('webhook_subscriptions').where({ id: subscription.subscriptionId }).update({ state: 'paused' });
  await burst(services, [subscription.storeId], count, writtenAt);
  while ((await fanOut(services)).events > 0);
  await db('webhook_subscriptions').where({ id: subscription.subscriptionId }).update({ state: 'active' });
  await db.raw('analyze');
  dispatcher.start();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const replay = await replayEvents(
    db,
    { storeId: subscription.storeId, installationId: subscription.installationId, scopes: new Set(['products:read']), now: Date.now() },
    subscription.subscriptionId,
    { from: new Date(writtenAt).toISOString(), to: new Date(writtenAt + 1000).toISOString() },
  );
  const delivered = async () => {
    const [row] = await db('webhook_deliveries').where({ subscription_id: subscription.subscriptionId, kind: 'replay', state: 'succeeded' }).count({ n: '*' });
    return Number(row?.n ?? 0);
  };
  // Delivered so far, every 250 ms: the rate over any stretch of the drain.
  const samples: Array<{ at: number; delivered: number }> = [];
  for (;;) {
    const done = await delivered();
    samples.push({ at: (performance.now() - started) / 1000, delivered: done });
    if (done >= replay.events_count || (await pending(services)) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await dispatcher.stop();
  const rateBetween = (from: { at: number; delivered: number }, to: { at: number; delivered: number }) =>
    (to.delivered - from.delivered) / (to.at - from.at || 1);
  const first = samples[0] as { at: number; delivered: number };
  const last = samples[samples.length - 1] as { at: number; delivered: number };
  const atFive = samples.find((sample) => sample.at >= 5) ?? last;
  const quarterLeft = samples.find((sample) => sample.delivered >= replay.events_count * 0.75) ?? first;
  const lags = (
    await db('webhook_deliveries')
      .where({ subscription_id: subscription.subscriptionId, kind: 'replay', state: 'succeeded' })
      .select<{ finished_at: number; created_at: number }[]>('finished_at', 'created_at')
  )
    .map((row) => Number(row.finished_at) - Number(row.created_at))
    .sort((a, b) => a - b);
  return {
    deliveries: replay.events_count,
    seconds,
    deliveriesPerSecond: replay.events_count / seconds,
    firstFiveSecondsPerSecond: rateBetween({ at: 0, delivered: 0 }, atFive),
    lastQuarterPerSecond: rateBetween(quarterLeft, last),
    commitToDeliveryP50Ms: percentile(lags, 0.5),
    commitToDeliveryP99Ms: percentile(lags, 0.99),
    // The worker's (this process's) CPU per delivery, the bench's own sampling included.
    cpuMsPerDelivery: (cpu.user + cpu.system) / 1000 / replay.events_count,
  };
}

/** The webhook cases asked for, with the sizes of webhookSettings (tools/bench/settings.ts). */
export async function benchWebhooks(options: ReturnType<typeof webhookSettings> & { readonly cases: readonly WebhookCase[] }): Promise<WebhookFigures[]> {
  const { db, name: database, close } = await benchDatabase(options.databaseUrl);
  const wanted = (name: WebhookCase) => options.cases.includes(name);
  const results: WebhookFigures[] = [];
  let receiver: ServerUnderTest | undefined;
  try {
    receiver = await startServer({ script: 'receiver.ts', onServerCpus: false });
    await migrateToLatest(db);
    const services = createServices({
      db,
      engine: engineOfHandle(db),
      rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 },
      webhooks: {
        environment: 'development',
        ...(options.attemptsPerSubscription === undefined ? {} : { attemptsPerSubscription: options.attemptsPerSubscription }),
      },
    });
    const subscriptions = await storesWithSubscriptions(services, receiver.base);
    const storeIds = subscriptions.map((subscription) => subscription.storeId);
    // The server's defaults, its 1 s poll included: an idle worker is started by the commits.
    const dispatcher = createDispatcher(services);

    // A database that has delivered before, with statistics, as autovacuum keeps them: a fresh
    // table without any leads PostgreSQL to plan each claim as a scan of every due delivery.
    await burst(services, storeIds, WARM_UP_EVENTS, Date.now() - 60_000);
    dispatcher.start();
    await until(async () => (await undispatched(services)) === 0 && (await pending(services)) === 0);
    await dispatcher.stop();
    await db.raw('analyze');

    if (wanted('webhooks.deliveries')) {
      const burstAt = Date.now();
      await burst(services, storeIds, options.deliveries, burstAt);
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      dispatcher.start();
      await until(async () => (await undispatched(services)) === 0 && (await pending(services)) === 0);
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      await dispatcher.stop();
      // The worker's CPU per delivery holds on a loaded machine, where the rate follows the core it gets.
      const cpuMsPerDelivery = (cpu.user + cpu.system) / 1000 / options.deliveries;
      results.push({
        name: 'webhooks.deliveries',
        figures: { deliveries: options.deliveries, seconds, deliveriesPerSecond: options.deliveries / seconds, cpuMsPerDelivery },
      });
      console.log(
        `  webhooks.deliveries (${database}): a backlog of ${options.deliveries} drained in ${seconds.toFixed(1)} s by one worker, ${Math.round(options.deliveries / seconds)} deliveries/s per worker, ${cpuMsPerDelivery.toFixed(3)} ms of the worker's CPU per delivery`,
      );
    }

    if (wanted('webhooks.recovery')) {
      const figures = await recoveryDrain(services, subscriptions[0] as BenchSubscription, options.recovery, createDispatcher(services));
      results.push({ name: 'webhooks.recovery', figures });
      console.log(
        `  webhooks.recovery (${database}): a replay of ${figures.deliveries} events to one subscription (${services.webhooks.attemptsPerSubscription} attempts at once) drained in ${figures.seconds.toFixed(1)} s by one worker, ${Math.round(figures.deliveriesPerSecond)} deliveries/s (first 5 s ${Math.round(figures.firstFiveSecondsPerSecond)}/s, last quarter ${Math.round(figures.lastQuarterPerSecond)}/s); commit to delivery median ${Math.round(figures.commitToDeliveryP50Ms)} ms; ${figures.cpuMsPerDelivery.toFixed(3)} ms of the worker's CPU per delivery`,
      );
    }

    if (wanted('webhooks.outbox lag')) {
      dispatcher.start();
      await until(async () => (await pending(services)) === 0);
      const single = await commitToDelivery(services, storeIds, SINGLE_COMMITS);
      const written = Date.now();
      await burst(services, storeIds, options.burst, written);
      const committed = performance.now();
      await until(async () => (await undispatched(services)) === 0);
      const fannedOutSeconds = (performance.now() - committed) / 1000;
      await until(async () => (await pending(services)) === 0);
      const deliveredSeconds = (performance.now() - committed) / 1000;
      await dispatcher.stop();
      const lags = (
        await db('webhook_deliveries as d')
          .join('outbox_events as o', 'o.id', 'd.event_id')
          .where('o.occurred_at', written)
          .select<{ finished_at: number; occurred_at: number }[]>('d.finished_at', 'o.occurred_at')
      )
        .map((row) => row.finished_at - row.occurred_at)
        .sort((a, b) => a - b);
      const figures = {
        singleCommits: single.length,
        commitToDeliveryP50Ms: percentile(single, 0.5),
        commitToDeliveryP99Ms: percentile(single, 0.99),
        events: options.burst,
        fannedOutSeconds,
        deliveredSeconds,
        lagP50Ms: percentile(lags, 0.5),
        lagP99Ms: percentile(lags, 0.99),
        lagMaxMs: lags[lags.length - 1] ?? 0,
      };
      results.push({ name: 'webhooks.outbox lag', figures });
      console.log(
        `  webhooks.outbox lag (${database}): commit to delivery of a single event to an idle worker median ${figures.commitToDeliveryP50Ms} ms, p99 ${figures.commitToDeliveryP99Ms} ms (${single.length} commits)`,
      );
      console.log(
        `  webhooks.outbox lag (${database}): ${options.burst} events fanned out in ${fannedOutSeconds.toFixed(1)} s, delivered in ${deliveredSeconds.toFixed(1)} s; event to delivery p50 ${figures.lagP50Ms} ms, p99 ${figures.lagP99Ms} ms, max ${figures.lagMaxMs} ms`,
      );
    }
  } finally {
    await receiver?.stop();
    await close();
  }
  return results;
}

/** `tsx tools/bench/webhooks.ts`: the webhook cases alone, with the settings they have in `pnpm bench`. */
if (require.main === module) {
  runScript(async () => {
    await benchWebhooks({ ...webhookSettings(), cases: casesFromEnv(WEBHOOK_CASES) ?? [...WEBHOOK_CASES] });
  });
}
