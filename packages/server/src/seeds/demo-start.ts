import { installDirectly } from '../oauth/direct-install';
import type { TokenResponse } from '../oauth/token-endpoint';
import { ALL_SCOPES } from '../platform/scopes';
import type { Services } from '../services/container';
import { DEMO_ACTIVITY, DEMO_OWNER, type DemoSeed, seedDemo, simulateDemoActivity } from './demo';

/**
 * The demo at the server's start (`SEED_DEMO`): on an empty database the demo store, its owner and
 * the demo app, installed; its credentials printed once; then its history simulated while the API
 * answers. server.ts calls these in that order.
 */

/**
 * The demo app is installed at first start with every scope, so that the token the start prints does
 * what the guides show, writes included (a product, a category, a webhook subscription), and reads
 * the catalog and the simulated activity at once. The demo is local only: SEED_DEMO is refused in
 * production.
 */
const DEMO_SCOPES = ALL_SCOPES;

export interface DemoStart extends DemoSeed {
  readonly tokens: TokenResponse;
}

/**
 * Only when SEED_DEMO asks (never in production): on an empty database, the demo store, owner and app, installed; the app takes the
 * docs console's sign-in at each of `bases`, the addresses the service answers at.
 */
export async function seedDemoStore(services: Services, bases: readonly string[]): Promise<DemoStart | undefined> {
  const demo = await seedDemo(services, bases);
  if (!demo) return undefined;
  const tokens = await installDirectly(services, {
    storeId: demo.store.id,
    appId: demo.app.id,
    scopes: [...DEMO_SCOPES],
    redirectUri: demo.version.redirectUrls[0] as string,
  });
  return { ...demo, tokens };
}

/**
 * Printed once, by the start that seeded the demo: the secret and tokens are not kept anywhere in
 * clear. The last line is the environment every sample of the guides and the reference reads.
 */
export function printDemo(base: string, demo: DemoStart): void {
  const { store, app, tokens } = demo;
  console.log(`Demo store ${store.id}  ${demo.catalog.products} products  owner ${DEMO_OWNER.email} / ${DEMO_OWNER.password}`);
  console.log(`Demo app   client_id ${app.id}  client_secret ${demo.clientSecret}  (shown once)`);
  console.log(`Try it     curl -H 'Authorization: Bearer ${tokens.access_token}' '${base}/stores/${store.id}/v1/products?limit=3'`);
  console.log(
    `           (every scope, reads and writes; valid ${tokens.expires_in} s; a new pair: node packages/server/dist/svc.js installation create ${app.id} ${store.id})`,
  );
  console.log(`Samples    export SVC_URL=${base} STORE_ID=${store.id} SVC_TOKEN=${tokens.access_token} CLIENT_ID=${app.id} CLIENT_SECRET=${demo.clientSecret}`);
}

/**
 * The demo store's history, simulated once, at the start that created the store. It runs after the
 * server listens, in short batches between which requests are answered, and ends between two
 * batches when the process stops.
 */
export async function simulateDemo(services: Services, base: string, demo: DemoStart, signal: AbortSignal): Promise<void> {
  const { days, orders } = DEMO_ACTIVITY;
  console.log(`Demo       simulating ${orders} orders over the last ${days} days of the demo store (the API answers meanwhile) …`);
  const started = performance.now();
  try {
    const summary = await simulateDemoActivity(services, demo.store.id, { signal });
    if (signal.aborted) return;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `Demo       ${summary.orders} orders (${summary.paid} paid, ${summary.refunded} refunded, ${summary.cancelled} cancelled), ${summary.carts} carts, ${summary.reviews} reviews in ${seconds} s`,
    );
    console.log(`Orders     curl -H 'Authorization: Bearer ${demo.tokens.access_token}' '${base}/stores/${demo.store.id}/v1/orders?limit=3'`);
  } catch (error) {
    if (!signal.aborted) console.error(`Demo       the simulation stopped: ${error instanceof Error ? error.message : String(error)}`);
  }
}
