import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { loadConfig } from './core/config';
import { createDatabase, describeDatabase } from './db/connection';
import { migrateToLatest } from './db/migrate';
import { answerClientErrors } from './http/client-errors';
import { bufferedOutput, createLogger } from './http/request-log';
import { runHousekeeping, scheduleHousekeeping } from './jobs/housekeeping';
import { createDispatcher } from './jobs/webhook-dispatcher';
import { installDirectly } from './oauth/direct-install';
import type { TokenResponse } from './oauth/token-endpoint';
import { type Deps, servicesFromConfig } from './platform/services';
import { DEMO_ACTIVITY, DEMO_OWNER, type DemoSeed, seedDemo, simulateDemoActivity } from './seeds/demo';

async function main(): Promise<void> {
  const config = loadConfig();
  const database = createDatabase(config);
  const applied = await migrateToLatest(database);
  if (applied.length > 0) console.log(`Database   migrated: ${applied.join(', ')}`);
  const services = servicesFromConfig(config, database);
  const demo = config.environment === 'production' ? undefined : await seedDemo(services);
  const demoTokens =
    demo &&
    (await installDirectly(services, { storeId: demo.store.id, appId: demo.app.id, scopes: DEMO_SCOPES, redirectUri: demo.version.redirectUrls[0] as string }));
  // A person at a terminal reads pretty lines; a collector reading a pipe or file gets JSON written in the background.
  const logger = createLogger({ level: config.logLevel, environment: config.environment }, process.stdout.isTTY ? process.stdout : bufferedOutput(1));
  const app = createApp({ config, services, logger });
  const server = app.listen(config.port, () => {
    const { port } = server.address() as AddressInfo;
    const base = `http://localhost:${port}`;
    console.log(`Store API  ${base}/stores/{storeId}/v1   (${describeDatabase(config)})`);
    console.log(`OAuth      ${base}/oauth/authorize`);
    console.log(`API docs   ${base}/docs`);
    console.log(`OpenAPI    ${base}/openapi.json`);
    console.log(`Dashboard  ${base}/dashboard`);
    if (demo && demoTokens) {
      printDemo(base, demo, demoTokens);
      void simulateDemo(services, base, demo, demoTokens);
    }
  });
  answerClientErrors(server);
  const housekeeping = scheduleHousekeeping(() => runHousekeeping(services), {
    log: (message) => logger.info(message),
    logError: (message) => logger.error(message),
  });
  const dispatchers = Array.from({ length: config.webhooks.workers }, () => createDispatcher(services, { logError: (message) => logger.error(message) }));
  for (const dispatcher of dispatchers) dispatcher.start();
  const stop = () => {
    const background = () => Promise.all([housekeeping.stop(), ...dispatchers.map((dispatcher) => dispatcher.stop())]);
    server.close(() => void background().finally(() => database.destroy().finally(() => logger.flush(() => process.exit(0)))));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** The demo app is installed at first start with these, so the catalog and the simulated activity can be read at once. */
const DEMO_SCOPES = [
  'products:read',
  'categories:read',
  'inventory:read',
  'orders:read',
  'payments:read',
  'carts:read',
  'coupons:read',
  'reviews:read',
  'analytics:read',
];

/** Printed once, by the start that seeded the demo: the secret and tokens are not kept anywhere in clear. */
function printDemo(base: string, demo: DemoSeed, tokens: TokenResponse): void {
  console.log(`Demo store ${demo.store.id}  ${demo.catalog.products} products  owner ${DEMO_OWNER.email} / ${DEMO_OWNER.password}`);
  console.log(`Demo app   client_id ${demo.app.id}  client_secret ${demo.clientSecret}  (shown once)`);
  console.log(`Try it     curl -H 'Authorization: Bearer ${tokens.access_token}' '${base}/stores/${demo.store.id}/v1/products?limit=3'`);
  console.log(`           (valid ${tokens.expires_in} s; later: npx -y pnpm@10 -s svc installation create ${demo.app.id} ${demo.store.id})`);
}

/**
 * The demo store's history, simulated once, at the start that created the store. It runs after the
 * server listens (a few seconds; longer on a busy machine), in batches between which requests are
 * answered, so a newcomer can read the catalog at once and the orders moments later.
 */
async function simulateDemo(deps: Deps, base: string, demo: DemoSeed, tokens: TokenResponse): Promise<void> {
  const { days, orders } = DEMO_ACTIVITY;
  console.log(`Demo       simulating ${orders} orders over the last ${days} days of the demo store (the API answers meanwhile) …`);
  const started = performance.now();
  try {
    const summary = await simulateDemoActivity(deps, demo.store.id);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `Demo       ${summary.orders} orders (${summary.paid} paid, ${summary.refunded} refunded, ${summary.cancelled} cancelled), ${summary.carts} carts, ${summary.reviews} reviews in ${seconds} s`,
    );
    console.log(`Orders     curl -H 'Authorization: Bearer ${tokens.access_token}' '${base}/stores/${demo.store.id}/v1/orders?limit=3'`);
  } catch (error) {
    console.error(`Demo       the simulation stopped: ${error instanceof Error ? error.message : String(error)}`);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
