import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../../packages/server/src/app';
import { systemClock } from '../../packages/server/src/core/clock';
import { createDatabase } from '../../packages/server/src/db/connection';
import { engineOfHandle } from '../../packages/server/src/db/engine';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { bufferedOutput, createLogger } from '../../packages/server/src/http/request-log';
import { installDirectly } from '../../packages/server/src/oauth/direct-install';
import { seedDemo, simulateDemoActivity } from '../../packages/server/src/seeds/demo';
import { createServices } from '../../packages/server/src/services/container';
import { failStart, listen, portOf, serveBench, tellParent } from './child';

/**
 * The server's first start on an empty SQLite data directory, for the `reads during simulation`
 * case: the demo store seeded, the server listening, then the demo's history simulated in the same
 * process, as `pnpm start` does (after BASELINE_MS here). Production settings otherwise (no response
 * validation, a line logged per request, to nowhere). Tells the bench `ready` once it listens,
 * `simulating` and `simulated` when the simulation starts and ends. Run in its own process by
 * tools/bench/run.ts.
 */
const UNLIMITED = 1_000_000_000;
const SCOPES = ['products:read', 'orders:read'];
/** Products read, spread over the demo catalog. */
const READ_PRODUCTS = 50;
/** The order page the start prints to try. */
const ORDERS_PATH = 'orders?limit=3';
/** Reads are answered this long before the simulation starts: what the same reads take on this machine without it. */
const BASELINE_MS = 3000;

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-first-start-'));
  const close = async () => fs.rmSync(dataDir, { recursive: true, force: true });
  try {
    const db = createDatabase({ databaseUrl: undefined, dataDir });
    await migrateToLatest(db);
    const services = createServices({ db, engine: engineOfHandle(db), clock: systemClock, rateLimits: { perInstallation: UNLIMITED, perClient: UNLIMITED } });
    const demo = await seedDemo(services);
    if (!demo) throw new Error(`${dataDir} was not empty`);
    const storeId = demo.store.id;
    const tokens = await installDirectly(services, { storeId, appId: demo.app.id, scopes: SCOPES, redirectUri: demo.version.redirectUrls[0] as string });
    const ids = (await db('products').where({ store_id: storeId }).orderBy('id').pluck('id')).map(Number);
    const store = `/stores/${storeId}/v1`;
    const paths = Array.from({ length: READ_PRODUCTS }, (_, index) => [
      `${store}/products/${ids[Math.floor((index * ids.length) / READ_PRODUCTS)]}`,
      `${store}/${ORDERS_PATH}`,
    ]).flat();

    const logger = createLogger({ level: 'info', environment: 'production' }, bufferedOutput(os.devNull));
    const app = createApp({ config: { validateResponses: false, exposeInternalErrors: false }, services, logger });
    const server = await listen(app);
    serveBench(server, { close });
    // A route's first request builds what it needs (its validators: a few hundred ms on a busy
    // machine), simulation or not. Taken before, so that the figures are the simulation's.
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    for (const path of paths.slice(0, 2)) await (await fetch(`http://127.0.0.1:${portOf(server)}${path}`, { headers })).arrayBuffer();
    tellParent({ type: 'ready', port: portOf(server), paths, accessToken: tokens.access_token });
    await new Promise((resolve) => setTimeout(resolve, BASELINE_MS));
    tellParent({ type: 'simulating' });
    const started = performance.now();
    const summary = await simulateDemoActivity(services, storeId);
    tellParent({ type: 'simulated', orders: summary.orders, simulationMs: performance.now() - started });
  } catch (error) {
    await close();
    throw error;
  }
}

main().catch(failStart);
