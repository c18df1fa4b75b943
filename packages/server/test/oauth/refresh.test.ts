import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { uninstall } from '../../src/platform/installations';
import { testDatabases } from '../support/databases';
import { type AppFixture, approveAndGetCode, createTestApp, createTestStore, installWithTokens, type StoreFixture, suiteHarness } from '../support/harness';
import { installedStockSync } from '../support/oauth-apps';
import {
  codeBody,
  countTokens,
  type Encoding,
  expectAccessRefused,
  expectAccessWorks,
  expectOAuthError,
  expectOneSharedPair,
  expectRefreshRefused,
  obtainTokens,
  postToken,
  refreshBody,
  tokenResponse,
} from '../support/token-client';

const SCOPES = ['products:read', 'products:write'];
const DAY_MS = 24 * 60 * 60 * 1000;
/** Past the moment identical requests still share a completed refresh's pair. */
const AFTER_SHARING_MS = 2001;

describe.each(testDatabases())('POST /oauth/token, the refresh rules, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
  });

  /** A fresh app installed in the store, with its first token pair. */
  async function installed(): Promise<{ client: AppFixture; tokens: TokenResponse }> {
    return installedStockSync(h, store, SCOPES);
  }

  const refresh = (client: AppFixture, refreshToken: string, encoding: Encoding = 'form') =>
    postToken(h.app, client.basic, refreshBody(refreshToken), encoding);
  const refreshed = (client: AppFixture, refreshToken: string) => obtainTokens(h.app, client.basic, refreshBody(refreshToken));
  const accessWorks = (accessToken: string) => expectAccessWorks(h.app, store.store.id, accessToken);
  const accessRefused = (accessToken: string) => expectAccessRefused(h.app, store.store.id, accessToken);

  it('rule 1: a refresh issues a new pair and the previous access token stops working at once', async () => {
    const { client, tokens } = await installed();
    await accessWorks(tokens.access_token);

    const response = await refresh(client, tokens.refresh_token);
    expect(response.status).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body).toEqual(tokenResponse({ scope: tokens.scope, storeId: store.store.id, installationId: tokens.installation_id }));
    expect(response.body.access_token).not.toBe(tokens.access_token);
    expect(response.body.refresh_token).not.toBe(tokens.refresh_token);
    expect(response.body.operation_id).not.toBe(tokens.operation_id);

    await accessRefused(tokens.access_token);
    await accessWorks(response.body.access_token);
  });

  it('rule 2: a refresh token is single use: presenting it again never issues another pair', async () => {
    const { client, tokens } = await installed();
    await refreshed(client, tokens.refresh_token);
    const issued = await countTokens(h.db, { installation_id: tokens.installation_id });
    h.clock.advance(AFTER_SHARING_MS);

    const again = await refresh(client, tokens.refresh_token);
    expect(again.status).toBe(400);
    expect(again.body).not.toHaveProperty('access_token');
    expect(await countTokens(h.db, { installation_id: tokens.installation_id })).toBe(issued);
  });

  it('rule 3: the 30-day window restarts at each refresh (used at 29 days, then 29 days later again)', async () => {
    const { client, tokens } = await installed();
    h.clock.advance(29 * DAY_MS);
    const second = await refreshed(client, tokens.refresh_token);
    // 58 days after the first pair: alive only because the window restarted at the refresh.
    h.clock.advance(29 * DAY_MS);
    const third = await refresh(client, second.refresh_token);
    expect(third.status).toBe(200);
    await accessWorks(third.body.access_token);
  });

  it('rule 3: a refresh token never used for 30 days is INVALID_REFRESH_TOKEN', async () => {
    const { client, tokens } = await installed();
    h.clock.advance(30 * DAY_MS);
    expectOAuthError(await refresh(client, tokens.refresh_token), 400, 'INVALID_REFRESH_TOKEN');
  });

  it('rule 4: 20 identical concurrent refreshes (form and JSON bodies) are one operation: one new pair, received by all', async () => {
    const { client, tokens } = await installed();
    const before = await countTokens(h.db);

    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => refresh(client, tokens.refresh_token, i % 2 === 0 ? 'form' : 'json')));

    const pair = expectOneSharedPair(responses);
    expect(await countTokens(h.db)).toBe(before + 2);
    expect(await countTokens(h.db, { operation_id: pair.operation_id })).toBe(2);
    await accessRefused(tokens.access_token);
    await accessWorks(pair.access_token);
    expect((await refresh(client, pair.refresh_token)).status).toBe(200);
  });

  it('rule 5: resending the latest refresh token after it succeeded, its successor unused, is REFRESH_ALREADY_USED and revokes nothing', async () => {
    const { client, tokens } = await installed();
    const successor = await refreshed(client, tokens.refresh_token);
    h.clock.advance(AFTER_SHARING_MS);

    expectOAuthError(await refresh(client, tokens.refresh_token), 400, 'REFRESH_ALREADY_USED');

    await accessWorks(successor.access_token);
    const next = await refresh(client, successor.refresh_token);
    expect(next.status).toBe(200);
  });

  it('rule 6: replaying an older refresh token (its successor refreshed since) is TOKEN_REUSE_DETECTED and revokes every token of the grant', async () => {
    const { client, tokens } = await installed();
    const second = await refreshed(client, tokens.refresh_token);
    const latest = await refreshed(client, second.refresh_token);

    expectOAuthError(await refresh(client, tokens.refresh_token), 400, 'TOKEN_REUSE_DETECTED');

    await accessRefused(latest.access_token);
    await expectRefreshRefused(h.app, client.basic, latest.refresh_token);
  });

  it('rule 6: resending a refresh token whose successor has been used is TOKEN_REUSE_DETECTED and revokes every token of the grant', async () => {
    const { client, tokens } = await installed();
    const successor = await refreshed(client, tokens.refresh_token);
    await accessWorks(successor.access_token);

    expectOAuthError(await refresh(client, tokens.refresh_token), 400, 'TOKEN_REUSE_DETECTED');

    await accessRefused(successor.access_token);
    await expectRefreshRefused(h.app, client.basic, successor.refresh_token);
  });

  it('rule 6: a resend first refused as REFRESH_ALREADY_USED, sent again once the successor was used, is TOKEN_REUSE_DETECTED and revokes the grant', async () => {
    const { client, tokens } = await installed();
    const successor = await refreshed(client, tokens.refresh_token);
    h.clock.advance(AFTER_SHARING_MS);
    expectOAuthError(await refresh(client, tokens.refresh_token), 400, 'REFRESH_ALREADY_USED');
    await accessWorks(successor.access_token);

    expectOAuthError(await refresh(client, tokens.refresh_token), 400, 'TOKEN_REUSE_DETECTED');

    await accessRefused(successor.access_token);
    await expectRefreshRefused(h.app, client.basic, successor.refresh_token);
  });

  it('rule 7: a refresh token presented by another client is INVALID_REFRESH_TOKEN and revokes nothing', async () => {
    const { client, tokens } = await installed();
    const other = await createTestApp(h, { name: 'Other App' });

    expectOAuthError(await refresh(other, tokens.refresh_token), 400, 'INVALID_REFRESH_TOKEN');

    await accessWorks(tokens.access_token);
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it('a refresh token without the svc_rt_ prefix is INVALID_GRANT', async () => {
    const { client, tokens } = await installed();
    expectOAuthError(await refresh(client, tokens.access_token), 400, 'INVALID_GRANT');
    expectOAuthError(await refresh(client, tokens.refresh_token.replace(/^svc_rt_/, 'svc_xx_')), 400, 'INVALID_GRANT');
    expectOAuthError(await postToken(h.app, client.basic, { grant_type: 'refresh_token' }), 400, 'INVALID_GRANT');
  });

  it('rule 8: after a re-consent with other scopes (grant_revision rose), refreshing the older grant is 403 RECONSENT_REQUIRED', async () => {
    const { client, tokens } = await installed();
    const code = await approveAndGetCode(h, store, client, ['products:read', 'orders:read']);
    const reconsented = await obtainTokens(h.app, client.basic, codeBody(code));
    expect(reconsented.grant_revision).toBe(tokens.grant_revision + 1);
    expect(reconsented.installation_id).toBe(tokens.installation_id);

    expectOAuthError(await refresh(client, tokens.refresh_token), 403, 'RECONSENT_REQUIRED');
    expect((await refresh(client, reconsented.refresh_token)).status).toBe(200);
  });

  it('a reinstall raises installation_generation to 2 and the tokens of generation 1 stop working', async () => {
    const { client, tokens } = await installed();
    await uninstall(h.services, tokens.installation_id);
    const reinstalled = await installWithTokens(h, store, client, SCOPES);
    expect(reinstalled.installation_id).toBe(tokens.installation_id);
    expect(reinstalled.installation_generation).toBe(2);

    await accessRefused(tokens.access_token);
    expectOAuthError(await refresh(client, tokens.refresh_token), 400, 'INVALID_REFRESH_TOKEN');
    await accessWorks(reinstalled.access_token);
  });

  it('rule 7: once an uninstall revoked the new pair, resending the refresh at once is INVALID_REFRESH_TOKEN: revoked tokens are never sent', async () => {
    const { client, tokens } = await installed();
    const successor = await refreshed(client, tokens.refresh_token);
    await uninstall(h.services, tokens.installation_id);

    const resent = await refresh(client, tokens.refresh_token);
    expectOAuthError(resent, 400, 'INVALID_REFRESH_TOKEN');
    expect(resent.body).not.toHaveProperty('access_token');
    await accessRefused(successor.access_token);
  });
});
