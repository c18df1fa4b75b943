import type { Express } from 'express';
import type { Knex } from 'knex';
import { type AppOptions, createApp } from '../../src/app';
import type { ApiVersionRegistry } from '../../src/core/api-versions';
import { ManualClock } from '../../src/core/clock';
import { engineOfHandle } from '../../src/db/engine';
import { migrateToLatest } from '../../src/db/migrate';
import type { ReadReplicas } from '../../src/db/read-routing';
import { approveAsOwner } from '../../src/oauth/direct-install';
import { s256 } from '../../src/oauth/pkce';
import { requestTokens, type TokenResponse } from '../../src/oauth/token-endpoint';
import { type App, type AppVersion, addVersion, registerApp } from '../../src/platform/apps';
import { ALL_SCOPES } from '../../src/platform/scopes';
import { createStore, type Store, type StoreOwner } from '../../src/platform/stores';
import { createServices, type Services } from '../../src/services/container';
import type { Metrics } from '../../src/services/metrics';
import type { TestDatabase } from './databases';

/** RFC 7636 Appendix B: the verifier and its S256 challenge. */
export const RFC7636_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
export const RFC7636_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const REDIRECT_URI = 'https://app.example.com/oauth/callback';
export const LAUNCH_URL = 'https://app.example.com/launch';
export const OWNER_PASSWORD = 'correct horse battery staple';

export interface Harness {
  db: Knex;
  clock: ManualClock;
  services: Services;
  app: Express;
}

export interface HarnessOptions {
  /** How long the suite's teardown may take (servers and browsers to close): jest's default when left out. */
  teardownMs?: number;
  rateLimits?: { perInstallation: number; perClient: number };
  logger?: AppOptions['logger'];
  /** The date versions served; the published registry when left out (a fixture may hold deprecated and retired ones). */
  apiVersions?: ApiVersionRegistry;
  /** What the app and its services count for `/metrics`; nothing when left out. */
  metrics?: Metrics;
  /** Read replicas of the migrated database (db/connection openReplicas); none when left out. Closed with the suite. */
  replicas?: (db: Knex) => ReadReplicas;
}

/** Tests reach no outside network: `localhost` is this machine, every other name has no address. */
export const localOnlyResolver = async (hostname: string): Promise<string[]> => (hostname === 'localhost' ? ['127.0.0.1'] : []);

/** A migrated database, a manual clock and the app over them, with response validation on. */
export async function openHarness(testDatabase: TestDatabase, options: HarnessOptions = {}): Promise<Harness> {
  const db = await testDatabase.open();
  await migrateToLatest(db);
  const clock = new ManualClock();
  const services = createServices({
    db,
    engine: engineOfHandle(db),
    clock,
    rateLimits: options.rateLimits ?? { perInstallation: 1000, perClient: 1000 },
    webhooks: { environment: 'test', resolve: localOnlyResolver },
    ...(options.apiVersions ? { apiVersions: options.apiVersions } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.replicas ? { replicas: options.replicas(db) } : {}),
  });
  const app = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services, logger: options.logger });
  return { db, clock, services, app };
}

/** A suite's harness: `atEnd` closes what the suite opened on it (servers, browsers) before the database closes. */
export interface SuiteHarness extends Harness {
  atEnd(close: () => Promise<void> | void): void;
}

/**
 * The set-up every database suite shares: the harness is opened before the suite's tests (so it is
 * filled in from the first `beforeAll` on) and, after them, what was registered with `atEnd` is
 * closed, last first, then the database.
 */
export function suiteHarness(testDatabase: TestDatabase, options: HarnessOptions = {}): SuiteHarness {
  const closers: Array<() => Promise<void> | void> = [];
  const suite = { atEnd: (close: () => Promise<void> | void) => void closers.push(close) } as SuiteHarness;
  beforeAll(async () => {
    Object.assign(suite, await openHarness(testDatabase, options));
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await suite.services?.replicas.close();
    await testDatabase.close();
  }, options.teardownMs);
  return suite;
}

let domainCounter = 0;

export interface StoreFixture {
  store: Store;
  owner: StoreOwner;
  email: string;
  password: string;
}

export async function createTestStore(h: Harness, name = 'Royal Oud'): Promise<StoreFixture> {
  domainCounter += 1;
  const email = `owner-${domainCounter}-${Date.now()}@example.com`;
  const { store, owner } = await createStore(h.services, {
    name,
    domain: `store-${domainCounter}-${Date.now()}.example.com`,
    owner: { email, name: 'Noura', password: OWNER_PASSWORD },
  });
  return { store, owner, email, password: OWNER_PASSWORD };
}

export interface AppFixture {
  app: App;
  version: AppVersion;
  clientSecret: string;
  /** `Authorization: Basic …` for this client. */
  basic: string;
}

export const basicHeader = (clientId: string, secret: string) => `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`;

export async function createTestApp(
  h: Harness,
  scopes: { required?: string[]; optional?: string[]; storeId?: string; name?: string } = {},
): Promise<AppFixture> {
  const { app, clientSecret } = await registerApp(h.services, { name: scopes.name ?? 'Stock Sync', ...(scopes.storeId ? { storeId: scopes.storeId } : {}) });
  const version = await addVersion(h.services, app.id, {
    redirectUrls: [REDIRECT_URI, 'http://localhost:8787/callback'],
    launchUrl: LAUNCH_URL,
    requiredScopes: scopes.required ?? ['products:read'],
    optionalScopes: scopes.optional ?? ['products:write', 'orders:read'],
  });
  return { app, version, clientSecret, basic: basicHeader(app.id, clientSecret) };
}

/** Consent as the store owner (through the domain, not the browser) and return the code. */
export function approveAndGetCode(h: Harness, store: StoreFixture, client: AppFixture, scopes: string[], challenge = RFC7636_CHALLENGE): Promise<string> {
  return approveAsOwner(h.services, { storeId: store.store.id, appId: client.app.id, scopes, redirectUri: REDIRECT_URI, codeChallenge: challenge });
}

/** Installs the app with these scopes and exchanges the code: a fresh token pair. */
export async function installWithTokens(h: Harness, store: StoreFixture, client: AppFixture, scopes: string[]): Promise<TokenResponse> {
  const code = await approveAndGetCode(h, store, client, scopes);
  return requestTokens(h.services, client.app.id, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: RFC7636_VERIFIER });
}

/** An app whose version requires every scope, installed, with a token pair: can call any operation. */
export async function fullAccess(h: Harness, store: StoreFixture): Promise<{ client: AppFixture; tokens: TokenResponse }> {
  const client = await createTestApp(h, { required: [...ALL_SCOPES], optional: [] });
  return { client, tokens: await installWithTokens(h, store, client, [...ALL_SCOPES]) };
}

export { s256 };
