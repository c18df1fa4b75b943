import { type ChildProcess, fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDatabase } from '../../packages/server/src/db/connection';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { createSubscription } from '../../packages/server/src/domain/webhooks/subscriptions/changes';
import { createDispatcher } from '../../packages/server/src/jobs/webhook-dispatcher';
import { installDirectly } from '../../packages/server/src/oauth/direct-install';
import { addVersion, registerApp } from '../../packages/server/src/platform/apps';
import { recordEvent } from '../../packages/server/src/platform/outbox';
import { createServices, type Services } from '../../packages/server/src/platform/services';
import { createStore } from '../../packages/server/src/platform/stores';

/**
 * The webhook cases of `pnpm bench`: one dispatcher (the server's default, 32 attempts at once) on
 * SQLite, delivering to a receiver on this machine in a process of its own.
 *
 * Events are spread over 8 stores with one subscription each, so that the limit of 4 attempts per
 * subscription at once is not what is measured.
 * - `webhooks.deliveries`: BENCH_WEBHOOK_DELIVERIES events (10,000) in the outbox when the worker
 *   starts: deliveries per second, from fan-out to the last recorded outcome.
 * - `webhooks.outbox lag`: a burst of BENCH_WEBHOOK_BURST events (10,000) written in one transaction
 *   while the worker runs: how long until the last was fanned out and delivered, and the time from
 *   each event to its delivery (p50, p99, max).
 */

export interface WebhookFigures {
  readonly name: string;
  readonly figures: Record<string, number>;
}

const REDIRECT_URI = 'http://localhost:8787/callback';
const SUBSCRIPTIONS = 8;

function startReceiver(): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(path.join(__dirname, 'receiver.ts'), [], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve({ child, port: message.port }));
    child.once('exit', (code) => reject(new Error(`The receiver exited (${code}) before listening`)));
  });
}

/** A product.created-sized event (about 1 KB). */
function productEvent(storeId: string, index: number, now: number) {
  return {
    type: 'product.created',
    storeId,
    installationId: null,
    occurredAt: now,
    data: { product: { id: index + 1, name: `Bench product ${index}`, description: 'x'.repeat(700), status: 'inactive', price: '0.00' } },
  };
}

/** SUBSCRIPTIONS stores, each with an app installed and subscribed to product.created at the receiver: the stores' ids. */
async function storesWithSubscriptions(services: Services, receiverPort: number): Promise<string[]> {
  const storeIds: string[] = [];
  for (let index = 0; index < SUBSCRIPTIONS; index += 1) {
    const { store } = await createStore(services, {
      name: `Webhook bench ${index}`,
      domain: `webhook-bench-${index}.example.com`,
      owner: { email: `bench-${index}@webhook-bench.example.com`, name: 'Bench', password: 'bench password, long enough' },
    });
    const { app } = await registerApp(services, { name: `Bench receiver ${index}` });
    await addVersion(services, app.id, {
      redirectUrls: [REDIRECT_URI],
      launchUrl: 'https://app.example.com/launch',
      requiredScopes: ['products:read'],
      optionalScopes: [],
    });
    const { installation_id: installationId } = await installDirectly(services, {
      storeId: store.id,
      appId: app.id,
      scopes: ['products:read'],
      redirectUri: REDIRECT_URI,
    });
    await createSubscription(
      services.db,
      services,
      { storeId: store.id, installationId, scopes: new Set(['products:read']), now: services.clock.now() },
      { endpoint_url: `http://127.0.0.1:${receiverPort}/hooks/${index}`, event_types: ['product.created'] },
    );
    storeIds.push(store.id);
  }
  return storeIds;
}

/** Writes `count` events spread over the stores in one transaction, as a burst of changes commits. */
async function burst(services: Services, storeIds: readonly string[], count: number, at: number): Promise<void> {
  await services.db.transaction(async (trx) => {
    for (let index = 0; index < count; index += 1) await recordEvent(trx, productEvent(storeIds[index % storeIds.length] as string, index, at));
  });
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
}

const pending = async (services: Services) => Number((await services.db('webhook_deliveries').whereNot({ state: 'succeeded' }).count({ n: '*' }))[0]?.n ?? 0);
const undispatched = async (services: Services) => Number((await services.db('outbox_events').whereNull('dispatched_at').count({ n: '*' }))[0]?.n ?? 0);

/** The value at `fraction` of an ascending list (nearest rank). */
export function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

export async function benchWebhooks(options: { deliveries: number; burst: number; wanted: (name: string) => boolean }): Promise<WebhookFigures[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-webhooks-'));
  const db = createDatabase({ databaseUrl: undefined, dataDir: dir });
  const receiver = await startReceiver();
  const results: WebhookFigures[] = [];
  try {
    await migrateToLatest(db);
    const services = createServices({ db, rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 }, webhooks: { environment: 'development' } });
    const storeIds = await storesWithSubscriptions(services, receiver.port);
    const dispatcher = createDispatcher(services, { pollMs: 50 });

    if (options.wanted('webhooks.deliveries')) {
      await burst(services, storeIds, options.deliveries, Date.now());
      const started = performance.now();
      dispatcher.start();
      await until(async () => (await undispatched(services)) === 0 && (await pending(services)) === 0);
      const seconds = (performance.now() - started) / 1000;
      await dispatcher.stop();
      results.push({ name: 'webhooks.deliveries', figures: { deliveries: options.deliveries, seconds, deliveriesPerSecond: options.deliveries / seconds } });
      console.log(`  webhooks.deliveries: ${options.deliveries} in ${seconds.toFixed(1)} s, ${Math.round(options.deliveries / seconds)} deliveries/s`);
    }

    if (options.wanted('webhooks.outbox lag')) {
      dispatcher.start();
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
        events: options.burst,
        fannedOutSeconds,
        deliveredSeconds,
        lagP50Ms: percentile(lags, 0.5),
        lagP99Ms: percentile(lags, 0.99),
        lagMaxMs: lags[lags.length - 1] ?? 0,
      };
      results.push({ name: 'webhooks.outbox lag', figures });
      console.log(
        `  webhooks.outbox lag: ${options.burst} events fanned out in ${fannedOutSeconds.toFixed(1)} s, delivered in ${deliveredSeconds.toFixed(1)} s; event to delivery p50 ${figures.lagP50Ms} ms, p99 ${figures.lagP99Ms} ms, max ${figures.lagMaxMs} ms`,
      );
    }
  } finally {
    receiver.child.kill();
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return results;
}

/** `tsx tools/bench/webhooks.ts`: the webhook cases alone. */
if (require.main === module) {
  benchWebhooks({ deliveries: 10_000, burst: 10_000, wanted: () => true }).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
