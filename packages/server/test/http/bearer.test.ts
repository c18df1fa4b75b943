import { randomUUID } from 'node:crypto';
import type request from 'supertest';
import { ACCESS_SECONDS } from '../../src/core/limits';
import { issueSecret } from '../../src/credentials/secrets';
import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { endStoreMigration, startStoreMigration } from '../../src/platform/stores';
import { expectError, me, refreshTokens, storeApi } from '../support/auth-steps';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, createTestStore, type Harness, installWithTokens, type StoreFixture, suiteHarness } from '../support/harness';
import { shiftableSystemTime } from '../support/system-time';

/** 401 UNAUTHENTICATED with a Bearer challenge naming the realm. */
function expectUnauthenticated(response: request.Response): void {
  expectError(response, 401, 'UNAUTHENTICATED');
  expect(response.headers['www-authenticate']).toMatch(/^Bearer realm="[^"]+"/);
}

/** The same token with its last (checksum) character changed. */
const withBrokenChecksum = (token: string) => `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;

/** An app whose version requires exactly these scopes, installed in the store: its client and a token pair. */
async function installedWith(h: Harness, store: StoreFixture, scopes: string[]): Promise<{ client: AppFixture; tokens: TokenResponse }> {
  const client = await createTestApp(h, { required: scopes, optional: [], name: `Needs ${scopes.join(' ')}` });
  return { client, tokens: await installWithTokens(h, store, client, scopes) };
}

describe.each(testDatabases())('bearer authentication of the store API on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;
  let otherStore: StoreFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
    otherStore = await createTestStore(h, 'Amber House');
  });

  describe('401 UNAUTHENTICATED', () => {
    it('no Authorization header: 401 with WWW-Authenticate: Bearer realm=…', async () => {
      const response = await me(h.app, store.store.id);
      expectUnauthenticated(response);
      expect(response.headers['www-authenticate']).not.toContain('error=');
    });

    it('another scheme than Bearer: 401', async () => {
      expectUnauthenticated(await me(h.app, store.store.id).set('Authorization', 'Basic dXNlcjpwYXNz'));
    });

    it.each([
      ['a refresh token', async (tokens: TokenResponse) => tokens.refresh_token],
      ['a token with another prefix (svc_xx_…)', async (tokens: TokenResponse) => tokens.access_token.replace(/^svc_at_/, 'svc_xx_')],
      ['an access token with a broken checksum', async (tokens: TokenResponse) => withBrokenChecksum(tokens.access_token)],
      ['a well-formed access token that was never issued', async () => issueSecret('accessToken')],
    ])('%s as the bearer token: 401 with error="invalid_token"', async (_case, tokenOf) => {
      const { tokens } = await installedWith(h, store, ['products:read']);
      const response = await me(h.app, store.store.id, await tokenOf(tokens));
      expectUnauthenticated(response);
      expect(response.headers['www-authenticate']).toContain('error="invalid_token"');
    });

    it('a revoked access token (its refresh token was exchanged): 401', async () => {
      const { client, tokens } = await installedWith(h, store, ['products:read']);
      expect((await me(h.app, store.store.id, tokens.access_token)).status).toBe(200);
      expect((await refreshTokens(h.app, client, tokens.refresh_token)).status).toBe(200);
      expectUnauthenticated(await me(h.app, store.store.id, tokens.access_token));
    });

    it('an access token works at 899 seconds and is expired at exactly 900 seconds', async () => {
      const { tokens } = await installedWith(h, store, ['products:read']);
      h.clock.advance((ACCESS_SECONDS - 1) * 1000);
      expect((await me(h.app, store.store.id, tokens.access_token)).status).toBe(200);
      h.clock.advance(1000);
      expectUnauthenticated(await me(h.app, store.store.id, tokens.access_token));
    });
  });

  it("a token of store A on store B's path, or on a store that does not exist: 404 STORE_NOT_FOUND", async () => {
    const { tokens } = await installedWith(h, store, ['products:read']);
    expectError(await me(h.app, otherStore.store.id, tokens.access_token), 404, 'STORE_NOT_FOUND');
    expectError(await storeApi(h.app, otherStore.store.id, 'products', tokens.access_token), 404, 'STORE_NOT_FOUND');
    expectError(await me(h.app, randomUUID(), tokens.access_token), 404, 'STORE_NOT_FOUND');
  });

  it('a migrating store answers 503 STORE_MIGRATING with Retry-After, and afterwards works under routeEpoch + 1', async () => {
    const moving = await createTestStore(h, 'Moving Store');
    const { tokens } = await installedWith(h, moving, ['products:read']);
    const before = await me(h.app, moving.store.id, tokens.access_token);
    expect(before.status).toBe(200);

    await startStoreMigration(h.services, moving.store.id);
    for (const path of ['me', 'products']) {
      const response = await storeApi(h.app, moving.store.id, path, tokens.access_token);
      expectError(response, 503, 'STORE_MIGRATING');
      expect(response.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    }

    await endStoreMigration(h.services, moving.store.id);
    const after = await me(h.app, moving.store.id, tokens.access_token);
    expect(after.status).toBe(200);
    expect(after.body.execution.routeEpoch).toBe(before.body.execution.routeEpoch + 1);
  });

  describe('scopes', () => {
    it('a missing scope: 403 INSUFFICIENT_SCOPE with a Bearer insufficient_scope challenge naming the scope', async () => {
      const { tokens } = await installedWith(h, store, ['reviews:read']);
      const response = await storeApi(h.app, store.store.id, 'products', tokens.access_token);
      expectError(response, 403, 'INSUFFICIENT_SCOPE');
      expect(response.headers['www-authenticate']).toMatch(/^Bearer .*error="insufficient_scope", scope="products:read"/);
    });

    it.each([['products:read'], ['categories:read']])('GET /categories accepts either of its scopes: with only %s the request passes auth', async (scope) => {
      const { tokens } = await installedWith(h, store, [scope]);
      const response = await storeApi(h.app, store.store.id, 'categories', tokens.access_token);
      expect({ status: response.status, data: Array.isArray(response.body.data) }).toEqual({ status: 200, data: true });
    });

    it('GET /categories with neither of its scopes: 403 naming both alternatives', async () => {
      const { tokens } = await installedWith(h, store, ['reviews:read']);
      const response = await storeApi(h.app, store.store.id, 'categories', tokens.access_token);
      expectError(response, 403, 'INSUFFICIENT_SCOPE');
      const challenge = /scope="([^"]*)"/.exec(response.headers['www-authenticate'] as string);
      expect(challenge?.[1]?.split(' ').sort()).toEqual(['categories:read', 'products:read']);
    });

    it('me and webhooks.list need a valid token only, no scope', async () => {
      const { tokens } = await installedWith(h, store, ['reviews:read']);
      expect((await me(h.app, store.store.id, tokens.access_token)).status).toBe(200);
      const subscriptions = await storeApi(h.app, store.store.id, 'webhook-subscriptions', tokens.access_token);
      expect({ status: subscriptions.status, data: subscriptions.body.data }).toEqual({ status: 200, data: [] });
    });
  });

  it("the execution object on /me carries the installation's values, and its requestId is meta.request_id and X-Request-Id", async () => {
    const { client, tokens } = await installedWith(h, store, ['products:read']);
    const response = await me(h.app, store.store.id, tokens.access_token);
    expect(response.status).toBe(200);
    const installation = await h.db('installations').where({ id: tokens.installation_id }).first();
    const storeRow = await h.db('stores').where({ id: store.store.id }).first();
    const appRow = await h.db('apps').where({ id: client.app.id }).first();
    expect(response.body.execution).toEqual({
      appId: client.app.id,
      versionId: client.version.id,
      installationId: tokens.installation_id,
      storeId: store.store.id,
      requestId: response.body.meta.request_id,
      generation: Number(installation.generation),
      routeEpoch: Number(storeRow.route_epoch),
      appAuthEpoch: Number(appRow.auth_epoch),
      grantRevision: Number(installation.grant_revision),
    });
    expect(response.headers['x-request-id']).toBe(response.body.meta.request_id);
  });
});

describe.each(testDatabases())('the per-installation rate limit on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 2, perClient: 1000 } });
  const systemTime = shiftableSystemTime();
  let store: StoreFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
  });

  it('the third request of an installation in a window is 429 RATE_LIMITED with Retry-After and the RateLimit fields', async () => {
    const { tokens } = await installedWith(h, store, ['products:read']);
    const { tokens: otherInstallation } = await installedWith(h, store, ['products:read']);
    const first = await me(h.app, store.store.id, tokens.access_token);
    const second = await me(h.app, store.store.id, tokens.access_token);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(first.headers['ratelimit-policy']).toBe('"installation";q=2;w=5');
    expect(second.headers.ratelimit).toMatch(/^"installation";r=0;t=\d+$/);

    const third = await me(h.app, store.store.id, tokens.access_token);
    expectError(third, 429, 'RATE_LIMITED');
    expect(third.headers['retry-after']).toMatch(/^[1-5]$/);
    expect(third.headers.ratelimit).toMatch(/^"installation";r=0;t=\d+$/);
    expect(third.headers['ratelimit-policy']).toBe('"installation";q=2;w=5');

    expect((await me(h.app, store.store.id, otherInstallation.access_token)).status).toBe(200);
    h.clock.advance(5000);
    systemTime.advance(5000);
    expect((await me(h.app, store.store.id, tokens.access_token)).status).toBe(200);
  });

  it("a request refused before its quota (a revoked token, another store's path, a migrating store) spends none of the installation's quota", async () => {
    const moving = await createTestStore(h, 'Quota Movers');
    const { client, tokens } = await installedWith(h, moving, ['products:read']);
    const refreshed = await refreshTokens(h.app, client, tokens.refresh_token); // the first access token is revoked
    expect(refreshed.status).toBe(200);
    const live = (refreshed.body as TokenResponse).access_token;
    await startStoreMigration(h.services, moving.store.id);
    for (let i = 0; i < 3; i++) {
      expectError(await me(h.app, moving.store.id, tokens.access_token), 401, 'UNAUTHENTICATED');
      expectError(await me(h.app, store.store.id, live), 404, 'STORE_NOT_FOUND');
      expectError(await me(h.app, moving.store.id, live), 503, 'STORE_MIGRATING');
    }
    await endStoreMigration(h.services, moving.store.id);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await me(h.app, moving.store.id, live)).status);
    expect(statuses).toEqual([200, 200, 429]);
  });
});
