import { type App, type AppVersion, addVersion, registerApp } from '../platform/apps';
import { ALL_SCOPES } from '../platform/scopes';
import { createStore, listStores, type Store } from '../platform/stores';
import type { Deps } from '../services/container';
import { type SeededCatalog, seedDemoCatalog } from './demo-catalog';
import { type SimulationRequest, type SimulationSummary, simulateStore } from './simulation/run';

/** The demo owner's sign-in, for local use only (start does not seed in production). */
export const DEMO_OWNER = { email: 'owner@demo-store.example', name: 'Demo Owner', password: 'demo-store-owner' } as const;
export const DEMO_REDIRECT_URL = 'http://localhost:8787/callback';

export interface DemoSeed {
  store: Store;
  app: App;
  version: AppVersion;
  /** Shown once, at the start that created it; only its hash is stored. */
  clientSecret: string;
  catalog: SeededCatalog;
}

/** Where the docs site's console (`/docs/console/`) takes a sign-in's answer, at a base address of the service. */
export const consoleRedirectUrl = (base: string) => `${base}/docs/console/`;

/**
 * On an empty database: a demo store with a few hundred products in categories, its owner, and a demo app (every scope optional except
 * `products:read`) whose redirect URLs are a localhost callback, so the OAuth flow can be walked by hand, and the docs console at each
 * of `consoleBases` (the service's addresses), so that the console signs in as it.
 */
export async function seedDemo(deps: Deps, consoleBases: readonly string[] = []): Promise<DemoSeed | undefined> {
  if ((await listStores(deps.db)).length > 0) return undefined;
  const { store } = await createStore(deps, { name: 'Demo Store', domain: 'demo-store.example', owner: { ...DEMO_OWNER } });
  const { app, clientSecret } = await registerApp(deps, { name: 'Demo App' });
  const version = await addVersion(deps, app.id, {
    redirectUrls: [DEMO_REDIRECT_URL, ...new Set(consoleBases.map(consoleRedirectUrl))],
    launchUrl: 'http://localhost:8787/launch',
    requiredScopes: ['products:read'],
    optionalScopes: ALL_SCOPES.filter((scope) => scope !== 'products:read'),
  });
  const catalog = await seedDemoCatalog(deps, store.id);
  return { store, app, version, clientSecret, catalog };
}

/** The demo store's history, simulated once at the first start: a quarter of a busy store's orders. */
export const DEMO_ACTIVITY = { days: 90, orders: 1500, seed: 2026 } as const;

/**
 * Plays the demo store's history (`svc simulate` with DEMO_ACTIVITY), so its orders, payments and
 * analytics read real data. It commits in short batches and lets the server answer between them;
 * `signal` (the process stopping) ends it between two batches.
 */
export function simulateDemoActivity(deps: Deps, storeId: string, options: Pick<SimulationRequest, 'signal' | 'onProgress'> = {}): Promise<SimulationSummary> {
  return simulateStore(deps, { storeId, ...DEMO_ACTIVITY, ...options });
}
