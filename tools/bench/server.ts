import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../../packages/server/src/app';
import { systemClock } from '../../packages/server/src/core/clock';
import { createDatabase } from '../../packages/server/src/db/connection';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { bufferedOutput, createLogger } from '../../packages/server/src/http/request-log';
import { validateAuthorization } from '../../packages/server/src/oauth/authorize';
import { answerConsent, rememberAuthorization } from '../../packages/server/src/oauth/consent';
import { s256 } from '../../packages/server/src/oauth/pkce';
import { requestTokens } from '../../packages/server/src/oauth/token-endpoint';
import { addVersion, registerApp } from '../../packages/server/src/platform/apps';
import { createServices, type Services } from '../../packages/server/src/platform/services';
import { createStore } from '../../packages/server/src/platform/stores';
import { seedCatalogForBench } from '../../packages/server/src/seeds/demo-catalog';
import { failStart, listen, portOf, serveBench, tellParent } from './child';

/**
 * The real server, as production runs it (no response validation, internal errors hidden, a line
 * logged per request), on a fresh SQLite file in a temporary directory, with one store of
 * BENCH_PRODUCTS products and an installed app holding `products:read`. Rate limits are raised so that they never trigger.
 * Run in its own process by tools/bench/run.ts.
 */
const REDIRECT_URI = 'http://localhost:8787/callback';
const UNLIMITED = 1_000_000_000;

/** Installs the app on the store through the OAuth domain functions and returns its first token pair. */
async function install(services: Services, storeId: string, ownerId: string, clientId: string) {
  const verifier = randomBytes(32).toString('base64url');
  const request = await validateAuthorization(services, {
    response_type: 'code',
    client_id: clientId,
    store_id: storeId,
    redirect_uri: REDIRECT_URI,
    state: randomBytes(12).toString('base64url'),
    code_challenge: s256(verifier),
    code_challenge_method: 'S256',
    scope: 'products:read',
  });
  const requestId = await rememberAuthorization(services, 'bench-session', ownerId, request);
  const outcome = await answerConsent(services, { requestId, sessionHash: 'bench-session', approve: true, optionalScopesKept: [] });
  if (!outcome.ok) throw new Error(`Consent failed: ${outcome.reason}`);
  const code = new URL(outcome.location).searchParams.get('code');
  if (!code) throw new Error(`No code in ${outcome.location}`);
  return requestTokens(services, clientId, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier });
}

async function main(): Promise<void> {
  const products = Number(process.env.BENCH_PRODUCTS ?? 100_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
  const db = createDatabase({ databaseUrl: undefined, dataDir }, { sqliteFile: 'bench.sqlite' });
  // The process exits right after: requests still queued for the database when the load stops must
  // not meet a destroyed pool, so the pool is left to die with the process.
  const close = async () => fs.rmSync(dataDir, { recursive: true, force: true });
  try {
    await migrateToLatest(db);
    const services = createServices({ db, clock: systemClock, rateLimits: { perInstallation: UNLIMITED, perClient: UNLIMITED } });
    const { store, owner } = await createStore(services, {
      name: 'Bench Store',
      domain: 'bench-store.example',
      owner: { email: 'owner@bench-store.example', name: 'Bench Owner', password: randomBytes(16).toString('base64url') },
    });
    const started = performance.now();
    await seedCatalogForBench(db, store.id, products);
    const seedMs = performance.now() - started;
    const bounds = await db('products').where({ store_id: store.id }).min({ first: 'id' }).max({ last: 'id' }).first();

    const { app: client } = await registerApp(services, { name: 'Bench App' });
    await addVersion(services, client.id, {
      redirectUrls: [REDIRECT_URI],
      launchUrl: 'http://localhost:8787/launch',
      requiredScopes: ['products:read'],
      optionalScopes: [],
    });
    let tokens = await install(services, store.id, owner.id, client.id);

    // Each request's line is written as in production, to nowhere: its cost is part of what is measured.
    const logger = createLogger({ level: 'info', environment: 'production' }, bufferedOutput(os.devNull));
    const app = createApp({ config: { validateResponses: false, exposeInternalErrors: false }, services, logger });
    const server = await listen(app);
    serveBench(server, {
      close,
      newToken: async () => {
        tokens = await requestTokens(services, client.id, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
        return tokens.access_token;
      },
    });
    tellParent({
      type: 'ready',
      port: portOf(server),
      storeId: store.id,
      accessToken: tokens.access_token,
      productIds: { first: Number(bounds?.first), last: Number(bounds?.last) },
      seedMs,
    });
  } catch (error) {
    await db.destroy().catch(() => undefined);
    await close();
    throw error;
  }
}

main().catch(failStart);
