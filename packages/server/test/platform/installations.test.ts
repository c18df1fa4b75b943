import request from 'supertest';
import { issueLaunch } from '../../src/oauth/launch';
import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { uninstall } from '../../src/platform/installations';
import { dashboardHome, exchangeCode, expectError, installationAction, me, outboxEvents, postForm, refreshTokens, signIn } from '../support/auth-steps';
import { CookieJar } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, approveAndGetCode, createTestStore, type StoreFixture, suiteHarness } from '../support/harness';
import { stockSyncApp } from '../support/oauth-apps';

describe.each(testDatabases())('installations: reinstall, uninstall and re-consent on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let client: AppFixture;

  beforeAll(async () => {
    client = await stockSyncApp(h, 'Lifecycle App');
  });

  /** The owner consents (again) with these scopes and the app exchanges the code over HTTP: the token response. */
  async function consentAndExchange(store: StoreFixture, scopes: string[]): Promise<TokenResponse> {
    const response = await exchangeCode(h.app, client, await approveAndGetCode(h, store, client, scopes));
    expect(response.status).toBe(200);
    return response.body as TokenResponse;
  }

  async function refreshed(refreshToken: string): Promise<TokenResponse> {
    const response = await refreshTokens(h.app, client, refreshToken);
    expect(response.status).toBe(200);
    return response.body as TokenResponse;
  }

  /** Every token of these pairs is dead: access tokens 401 on the store API, refresh tokens refused. */
  async function expectAllDead(store: StoreFixture, pairs: TokenResponse[]): Promise<void> {
    for (const pair of pairs) {
      expectError(await me(h.app, store.store.id, pair.access_token), 401, 'UNAUTHENTICATED');
      expectError(await refreshTokens(h.app, client, pair.refresh_token), 400, 'INVALID_REFRESH_TOKEN');
    }
  }

  const verifyLaunch = (launchUrl: string) => request(h.app).post('/oauth/launch/verify').set('Authorization', client.basic).send({ launch_url: launchUrl });

  it('a reinstall raises installation_generation from 1 to 2 and every token of generation 1 stops working', async () => {
    const store = await createTestStore(h);
    const first = await consentAndExchange(store, ['products:read']);
    expect(first.installation_generation).toBe(1);
    const firstRefreshed = await refreshed(first.refresh_token);
    await uninstall(h.services, first.installation_id);
    h.clock.advance(60_000); // the owner comes back a minute later

    const again = await consentAndExchange(store, ['products:read']);
    expect(again.installation_generation).toBe(2);
    const current = await me(h.app, store.store.id, again.access_token);
    expect(current.status).toBe(200);
    expect(current.body.data.installation.generation).toBe(2);
    expect(current.body.execution.generation).toBe(2);

    await expectAllDead(store, [firstRefreshed]);
    expectError(await me(h.app, store.store.id, first.access_token), 401, 'UNAUTHENTICATED');
    expectError(await refreshTokens(h.app, client, first.refresh_token), 400, 'INVALID_REFRESH_TOKEN');
    expect((await refreshed(again.refresh_token)).installation_generation).toBe(2);
  });

  it('a token request resent right after an uninstall is refused, not answered with the revoked pair', async () => {
    const store = await createTestStore(h);
    const code = await approveAndGetCode(h, store, client, ['products:read']);
    const exchanged = await exchangeCode(h.app, client, code);
    expect(exchanged.status).toBe(200);
    const refreshRequest = exchanged.body.refresh_token as string;
    const pair = await refreshed(refreshRequest);
    // Before the uninstall an identical resend shares the same pair (the sharing window)...
    expect((await refreshTokens(h.app, client, refreshRequest)).body.access_token).toBe(pair.access_token);

    await uninstall(h.services, pair.installation_id);
    // ...after it, no token response may come back: its tokens are revoked and the app is uninstalled.
    expectError(await refreshTokens(h.app, client, refreshRequest), 400, 'INVALID_REFRESH_TOKEN');
    expectError(await exchangeCode(h.app, client, code), 400, 'INVALID_CODE');
  });

  it('an uninstall revokes every token, code and launch of the installation and writes app.uninstalled to the outbox once', async () => {
    const store = await createTestStore(h);
    const installed = await consentAndExchange(store, ['products:read']);
    const live = await refreshed(installed.refresh_token);
    const unusedCode = await approveAndGetCode(h, store, client, ['products:read']);
    const launchUrl = await issueLaunch(h.services, store.store.id, client.app.id);

    const jar = new CookieJar();
    await signIn(h.app, jar, store);
    const { csrf } = await dashboardHome(h.app, jar);
    const uninstallPath = installationAction(store, installed.installation_id, 'uninstall');
    expect((await postForm(h.app, jar, uninstallPath, { csrf })).status).toBe(303);

    await expectAllDead(store, [live]);
    expectError(await exchangeCode(h.app, client, unusedCode), 400, 'INVALID_CODE');
    expectError(await verifyLaunch(launchUrl), 400, 'INVALID_LAUNCH');

    // A second uninstall (the form sent again, or the platform command) changes nothing and emits nothing.
    expect((await postForm(h.app, jar, uninstallPath, { csrf })).status).toBe(404);
    await expect(uninstall(h.services, installed.installation_id)).rejects.toThrow();
    const events = await outboxEvents(h, store.store.id, 'app.uninstalled');
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({ app_id: client.app.id, installation_id: installed.installation_id, installation_generation: 1 });
  });

  it('re-consent with changed scopes raises grant_revision; re-consent with the same scopes does not', async () => {
    const store = await createTestStore(h);
    const installed = await consentAndExchange(store, ['products:read']);
    expect(installed.grant_revision).toBe(1);

    const unchanged = await consentAndExchange(store, ['products:read']);
    expect(unchanged.grant_revision).toBe(1);
    expect((await me(h.app, store.store.id, unchanged.access_token)).body.data.installation.grant_revision).toBe(1);

    const widened = await consentAndExchange(store, ['products:read', 'orders:read']);
    expect(widened).toMatchObject({ grant_revision: 2, installation_generation: 1, installation_id: installed.installation_id });
    const afterWidening = await me(h.app, store.store.id, widened.access_token);
    expect(afterWidening.body.data.installation).toMatchObject({ generation: 1, grant_revision: 2 });
    expect(afterWidening.body.execution.grantRevision).toBe(2);
    expect([...afterWidening.body.data.scopes].sort()).toEqual(['orders:read', 'products:read']);

    const sameAgain = await consentAndExchange(store, ['orders:read', 'products:read']);
    expect(sameAgain.grant_revision).toBe(2);
    const narrowed = await consentAndExchange(store, ['products:read']);
    expect(narrowed.grant_revision).toBe(3);
    expect((await me(h.app, store.store.id, narrowed.access_token)).body.execution.grantRevision).toBe(3);
  });

  it('a refresh of a grant issued before the scopes changed is 403 RECONSENT_REQUIRED', async () => {
    const store = await createTestStore(h);
    const before = await consentAndExchange(store, ['products:read']);
    const after = await consentAndExchange(store, ['products:read', 'products:write']);
    expect(after.grant_revision).toBe(2);
    expectError(await refreshTokens(h.app, client, before.refresh_token), 403, 'RECONSENT_REQUIRED');
    expect((await refreshed(after.refresh_token)).grant_revision).toBe(2);
  });
});
