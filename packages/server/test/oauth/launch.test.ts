import request from 'supertest';
import { issueLaunch, LAUNCH_MS } from '../../src/oauth/launch';
import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { dashboardHome, expectError, installationAction, postForm, signIn } from '../support/auth-steps';
import { CookieJar } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, createTestStore, installWithTokens, type StoreFixture, suiteHarness } from '../support/harness';

const iso = (milliseconds: number) => new Date(milliseconds).toISOString();

/** The launch URL with one of its parameters replaced. */
function withParameter(launchUrl: string, name: string, value: string): string {
  const url = new URL(launchUrl);
  url.searchParams.set(name, value);
  return url.toString();
}

describe.each(testDatabases())('POST /oauth/launch/verify on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;
  let client: AppFixture;
  let notInstalled: AppFixture;
  let tokens: TokenResponse;

  beforeAll(async () => {
    store = await createTestStore(h);
    client = await createTestApp(h, { required: ['products:read'], optional: ['orders:read'], name: 'Launch App' });
    notInstalled = await createTestApp(h, { name: 'Not Installed App' });
    tokens = await installWithTokens(h, store, client, ['products:read', 'orders:read']);
  });

  const verify = (basic: string | undefined, body: Record<string, unknown>) => {
    const call = request(h.app).post('/oauth/launch/verify');
    return (basic === undefined ? call : call.set('Authorization', basic)).send(body);
  };
  const launchOf = (of: AppFixture = client) => issueLaunch(h.services, store.store.id, of.app.id);

  async function expectInvalidLaunch(of: AppFixture, launchUrl: string): Promise<void> {
    const response = await verify(of.basic, { launch_url: launchUrl });
    expectError(response, 400, 'INVALID_LAUNCH');
    expect(response.headers['cache-control']).toBe('no-store');
  }

  it('an installed app learns its store, installation, generation and granted scopes', async () => {
    const issuedAt = h.clock.now();
    const launchUrl = await launchOf();
    h.clock.advance(30_000);
    const response = await verify(client.basic, { launch_url: launchUrl });
    expect(response.status).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body).toEqual({
      store_id: store.store.id,
      app_id: client.app.id,
      installed: true,
      installation_id: tokens.installation_id,
      installation_generation: 1,
      scopes: expect.any(Array),
      launch_expires_at: iso(issuedAt + LAUNCH_MS),
      verified_at: iso(h.clock.now()),
    });
    expect([...response.body.scopes].sort()).toEqual(['orders:read', 'products:read']);
  });

  it('an app that is not installed learns installed false, null installation and no scopes', async () => {
    const response = await verify(notInstalled.basic, { launch_url: await launchOf(notInstalled) });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      store_id: store.store.id,
      app_id: notInstalled.app.id,
      installed: false,
      installation_id: null,
      installation_generation: null,
      scopes: [],
    });
  });

  it('the launch URL the dashboard opens verifies', async () => {
    const jar = new CookieJar();
    await signIn(h.app, jar, store);
    const { csrf } = await dashboardHome(h.app, jar);
    const opened = await postForm(h.app, jar, installationAction(store, tokens.installation_id, 'open'), { csrf });
    expect(opened.status).toBe(303);
    const response = await verify(client.basic, { launch_url: opened.headers.location as string });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ installed: true, installation_id: tokens.installation_id });
  });

  it('a launch token is single use: the second verification is 400 INVALID_LAUNCH', async () => {
    const launchUrl = await launchOf();
    expect((await verify(client.basic, { launch_url: launchUrl })).status).toBe(200);
    await expectInvalidLaunch(client, launchUrl);
  });

  it('a launch token verifies until just before 5 minutes and is 400 INVALID_LAUNCH at 5 minutes', async () => {
    const early = await launchOf();
    const late = await launchOf();
    h.clock.advance(LAUNCH_MS - 1);
    expect((await verify(client.basic, { launch_url: early })).status).toBe(200);
    h.clock.advance(1);
    await expectInvalidLaunch(client, late);
  });

  it("another app's client cannot verify it (400 INVALID_LAUNCH) and does not spend it", async () => {
    const launchUrl = await launchOf();
    await expectInvalidLaunch(notInstalled, launchUrl);
    expect((await verify(client.basic, { launch_url: launchUrl })).status).toBe(200);
  });

  it.each([
    ['svc_store_id of another store', 'svc_store_id', async () => (await createTestStore(h, 'Elsewhere')).store.id],
    ['svc_timestamp a second later', 'svc_timestamp', async () => String(Math.floor(h.clock.now() / 1000) + 1)],
    ['svc_launch_token with a broken checksum', 'svc_launch_token', async () => `svc_lt_${'A'.repeat(49)}`],
  ])('a launch URL with %s is 400 INVALID_LAUNCH', async (_case, name, value) => {
    const launchUrl = await launchOf();
    await expectInvalidLaunch(client, withParameter(launchUrl, name, await value()));
  });

  it('a launch URL without svc_launch_token is 400 INVALID_LAUNCH', async () => {
    const url = new URL(await launchOf());
    url.searchParams.delete('svc_launch_token');
    await expectInvalidLaunch(client, url.toString());
  });

  it.each([
    ['an extra key', { extra: 'x' }],
    ['client_id in the body', { client_id: 'the-client' }],
    ['client_secret in the body', { client_secret: 'svc_cs_secret' }],
  ])('a body with %s is 400 INVALID_REQUEST', async (_case, extra) => {
    const response = await verify(client.basic, { launch_url: await launchOf(), ...extra });
    expectError(response, 400, 'INVALID_REQUEST');
  });

  it('a launch_url that is not a URL is 400 INVALID_REQUEST', async () => {
    expectError(await verify(client.basic, { launch_url: 'not a url' }), 400, 'INVALID_REQUEST');
  });

  it('without Basic credentials, or with a wrong secret, it is 401 INVALID_CLIENT with WWW-Authenticate: Basic', async () => {
    const launchUrl = await launchOf();
    const wrongSecret = `Basic ${Buffer.from(`${client.app.id}:svc_cs_${'x'.repeat(43)}`).toString('base64')}`;
    for (const basic of [undefined, wrongSecret]) {
      const response = await verify(basic, { launch_url: launchUrl });
      expectError(response, 401, 'INVALID_CLIENT');
      expect(response.headers['www-authenticate']).toMatch(/^Basic/);
    }
    expect((await verify(client.basic, { launch_url: launchUrl })).status).toBe(200);
  });
});
