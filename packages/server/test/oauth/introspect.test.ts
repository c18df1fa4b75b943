import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createApp } from '../../src/app';
import { issueSecret } from '../../src/credentials/secrets';
import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { uninstall } from '../../src/platform/installations';
import { startStoreMigration } from '../../src/platform/stores';
import { testDatabases } from '../support/databases';
import {
  type AppFixture,
  approveAndGetCode,
  basicHeader,
  createTestApp,
  createTestStore,
  installWithTokens,
  type StoreFixture,
  suiteHarness,
} from '../support/harness';
import { installedInNewStore } from '../support/oauth-apps';
import { codeBody, type Encoding, expectInvalidClient, expectOAuthError, getMe, obtainTokens, postOAuth, refreshBody } from '../support/token-client';

const SCOPES = ['products:read', 'orders:read'];
const ACCESS_MS = 900_000;
const REFRESH_MS = 30 * 24 * 3600 * 1000;
const DEFAULT_ISSUER = 'http://localhost:3000';

describe.each(testDatabases())('POST /oauth/introspect (RFC 7662) on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let client: AppFixture;
  let otherClient: AppFixture;

  beforeAll(async () => {
    client = await createTestApp(h, { required: ['products:read'], optional: ['orders:read', 'products:write'] });
    otherClient = await createTestApp(h, { required: ['products:read'], optional: ['orders:read'], name: 'Other App' });
  });

  const introspect = (token: string, app: AppFixture = client, encoding: Encoding = 'form', hint?: string) =>
    postOAuth(h.app, '/oauth/introspect', app.basic, hint === undefined ? { token } : { token, token_type_hint: hint }, encoding);

  async function installed(app: AppFixture = client, scopes: string[] = SCOPES): Promise<{ store: StoreFixture; pair: TokenResponse }> {
    return installedInNewStore(h, app, scopes);
  }

  const refreshOnce = (pair: TokenResponse, app: AppFixture = client) => obtainTokens(h.app, app.basic, refreshBody(pair.refresh_token));

  async function expectInactive(token: string, app: AppFixture = client): Promise<void> {
    const response = await introspect(token, app);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ active: false });
    expect(response.headers['cache-control']).toBe('no-store');
  }

  describe('a live token of the calling client', () => {
    it.each<Encoding>(['form', 'json'])('an access token (%s body): active, with its scope, times, store and installation', async (encoding) => {
      const issuedAt = h.clock.now();
      const { store, pair } = await installed();
      const response = await introspect(pair.access_token, client, encoding, 'access_token');
      expect(response.status).toBe(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toEqual({
        active: true,
        scope: pair.scope,
        client_id: client.app.id,
        token_type: 'Bearer',
        exp: Math.floor((issuedAt + ACCESS_MS) / 1000),
        iat: Math.floor(issuedAt / 1000),
        iss: DEFAULT_ISSUER,
        sub: store.store.id,
        aud: `${DEFAULT_ISSUER}/stores/${store.store.id}/v1`,
        store_id: store.store.id,
        installation_id: pair.installation_id,
        installation_generation: 1,
      });
    });

    it('a refresh token: active, without token_type and aud; the hint changes nothing', async () => {
      const issuedAt = h.clock.now();
      const { store, pair } = await installed();
      for (const hint of [undefined, 'refresh_token', 'access_token', 'something_else']) {
        const response = await introspect(pair.refresh_token, client, 'form', hint);
        expect(response.body).toEqual({
          active: true,
          scope: pair.scope,
          client_id: client.app.id,
          exp: Math.floor((issuedAt + REFRESH_MS) / 1000),
          iat: Math.floor(issuedAt / 1000),
          iss: DEFAULT_ISSUER,
          sub: store.store.id,
          store_id: store.store.id,
          installation_id: pair.installation_id,
          installation_generation: 1,
        });
      }
    });

    it('introspecting is not using: a pair only introspected is still "unused" for lost-response recovery', async () => {
      const { pair } = await installed();
      await introspect(pair.access_token);
      await introspect(pair.refresh_token);
      const rows = await h.db('tokens').where({ installation_id: pair.installation_id });
      expect(rows.map((row: { first_used_at: number | null }) => row.first_used_at)).toEqual([null, null]);
    });

    it('the issuer is the configured PUBLIC_URL', async () => {
      const { store, pair } = await installed();
      const app = createApp({
        config: { validateResponses: true, exposeInternalErrors: true },
        services: { ...h.services, issuer: 'https://api.example.com' },
      });
      const response = await postOAuth(app, '/oauth/introspect', client.basic, { token: pair.access_token });
      expect(response.body).toMatchObject({ iss: 'https://api.example.com', aud: `https://api.example.com/stores/${store.store.id}/v1` });
    });
  });

  describe('{"active": false} for anything else, and nothing more', () => {
    it.each([
      ['an unknown access token', () => issueSecret('accessToken')],
      ['an unknown refresh token', () => issueSecret('refreshToken')],
      ['a string that is no token of this server', () => 'eyJhbGciOiJub25lIn0.e30.'],
      ['a token with a broken checksum', () => `svc_at_${'A'.repeat(49)}`],
    ])('%s', async (_, token) => {
      await expectInactive(token());
    });

    it("another client's live tokens: inactive for this client, active for their own", async () => {
      const { pair } = await installed(otherClient, ['products:read']);
      await expectInactive(pair.access_token);
      await expectInactive(pair.refresh_token);
      expect((await introspect(pair.access_token, otherClient)).body.active).toBe(true);
    });

    it('an expired access token (after 900 seconds), and an expired refresh token (after 30 days)', async () => {
      const { pair } = await installed();
      h.clock.advance(ACCESS_MS - 1);
      expect((await introspect(pair.access_token)).body.active).toBe(true);
      h.clock.advance(1);
      await expectInactive(pair.access_token);
      expect((await introspect(pair.refresh_token)).body.active).toBe(true);
      h.clock.advance(REFRESH_MS - ACCESS_MS);
      await expectInactive(pair.refresh_token);
    });

    it('a refreshed pair: the previous access token (revoked by the refresh) and the exchanged refresh token', async () => {
      const { pair } = await installed();
      const next = await refreshOnce(pair);
      await expectInactive(pair.access_token);
      await expectInactive(pair.refresh_token);
      expect((await introspect(next.access_token)).body.active).toBe(true);
      expect((await introspect(next.refresh_token)).body.active).toBe(true);
    });

    it('revoked tokens: an access token revoked alone, then the whole grant', async () => {
      const { pair } = await installed();
      expect((await postOAuth(h.app, '/oauth/revoke', client.basic, { token: pair.access_token }, 'form')).status).toBe(200);
      await expectInactive(pair.access_token);
      expect((await introspect(pair.refresh_token)).body.active).toBe(true);
      expect((await postOAuth(h.app, '/oauth/revoke', client.basic, { token: pair.refresh_token }, 'form')).status).toBe(200);
      await expectInactive(pair.refresh_token);
    });

    it('tokens of an uninstalled app, and of an earlier installation generation after a reinstall', async () => {
      const { store, pair } = await installed();
      await uninstall(h.services, pair.installation_id);
      await expectInactive(pair.access_token);
      await expectInactive(pair.refresh_token);
      const again = await installWithTokens(h, store, client, SCOPES);
      expect(again.installation_generation).toBe(2);
      await expectInactive(pair.access_token);
      expect((await introspect(again.access_token)).body).toMatchObject({ active: true, installation_generation: 2 });
    });

    it('a refresh token whose grant is older than the installation’s scopes (the refresh would be RECONSENT_REQUIRED)', async () => {
      const { store, pair } = await installed(client, ['products:read']);
      // The owner consents again with a wider grant; the app has not exchanged the new code yet.
      await approveAndGetCode(h, store, client, ['products:read', 'orders:read']);
      await expectInactive(pair.refresh_token);
      const refused = await postOAuth(h.app, '/oauth/token', client.basic, refreshBody(pair.refresh_token), 'form');
      expectOAuthError(refused, 403, 'RECONSENT_REQUIRED');
      // Its access token acts for the narrower grant until it expires, as the store API lets it.
      expect((await introspect(pair.access_token)).body).toMatchObject({ active: true, scope: 'products:read' });
    });
  });

  it('one rule with the store API: an access token is active exactly when GET /me lets it through, with the scopes /me lists', async () => {
    const { store, pair } = await installed();
    const next = await refreshOnce(pair);
    const { pair: foreign } = await installed(otherClient, ['products:read']);
    const { store: gone, pair: uninstalled } = await installed();
    await uninstall(h.services, uninstalled.installation_id);
    const cases: [StoreFixture | { store: { id: string } }, string][] = [
      [store, pair.access_token],
      [store, next.access_token],
      [gone, uninstalled.access_token],
      [store, issueSecret('accessToken')],
    ];
    for (const [where, token] of cases) {
      const me = await getMe(h.app, where.store.id, token);
      const introspection = (await introspect(token)).body as { active: boolean; scope?: string };
      expect({ token: token.slice(0, 12), active: introspection.active }).toEqual({ token: token.slice(0, 12), active: me.status === 200 });
      if (me.status === 200) expect(introspection.scope?.split(' ').sort()).toEqual([...me.body.data.scopes].sort());
    }
    // Another client's token works at the store API for that client, but this client learns nothing of it.
    expect((await introspect(foreign.access_token)).body).toEqual({ active: false });
  });

  it('while the store is moving the token is still active (the store API answers 503, not 401)', async () => {
    const { store, pair } = await installed();
    await startStoreMigration(h.services, store.store.id);
    expect((await getMe(h.app, store.store.id, pair.access_token)).status).toBe(503);
    expect((await introspect(pair.access_token)).body.active).toBe(true);
  });

  describe('client authentication, as at the token endpoint', () => {
    it('no Authorization header is 401 INVALID_CLIENT with WWW-Authenticate: Basic', async () => {
      const response = await postOAuth(h.app, '/oauth/introspect', undefined, { token: issueSecret('accessToken') }, 'form');
      expectInvalidClient(response);
    });

    it.each<[string, () => string]>([
      ['a wrong secret', () => basicHeader(client.app.id, issueSecret('clientSecret'))],
      ['an unknown client id', () => basicHeader(randomUUID(), client.clientSecret)],
      ['a bearer token', () => `Bearer ${issueSecret('accessToken')}`],
    ])('%s is 401 INVALID_CLIENT with WWW-Authenticate: Basic', async (_, authorization) => {
      const { pair } = await installed();
      const response = await postOAuth(h.app, '/oauth/introspect', authorization(), { token: pair.access_token }, 'form');
      expectInvalidClient(response);
    });

    it.each<Encoding>(['form', 'json'])('client credentials in a %s body are 400 INVALID_REQUEST', async (encoding) => {
      const body = { token: issueSecret('accessToken'), client_id: client.app.id, client_secret: client.clientSecret };
      for (const authorization of [client.basic, undefined]) {
        expectOAuthError(await postOAuth(h.app, '/oauth/introspect', authorization, body, encoding), 400, 'INVALID_REQUEST');
      }
    });

    it('a malformed Basic header is 400 INVALID_REQUEST', async () => {
      expectOAuthError(
        await postOAuth(h.app, '/oauth/introspect', 'Basic !!not-base64!!', { token: issueSecret('accessToken') }, 'form'),
        400,
        'INVALID_REQUEST',
      );
    });
  });

  describe('the body', () => {
    it.each<[string, object]>([
      ['no token', {}],
      ['an empty token', { token: '' }],
      ['an unknown key', { token: issueSecret('accessToken'), resource: 'https://api.example.com' }],
    ])('%s is 400 INVALID_REQUEST', async (_, body) => {
      for (const encoding of ['form', 'json'] as const)
        expectOAuthError(await postOAuth(h.app, '/oauth/introspect', client.basic, body, encoding), 400, 'INVALID_REQUEST');
    });

    it('a text body is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
      const response = await request(h.app).post('/oauth/introspect').set('Authorization', client.basic).set('Content-Type', 'text/plain').send('token=x');
      expectOAuthError(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });
  });

  it('a code is no token: introspecting an authorization code is inactive and leaves it exchangeable', async () => {
    const store = await createTestStore(h);
    const code = await approveAndGetCode(h, store, client, ['products:read']);
    await expectInactive(code);
    expect((await postOAuth(h.app, '/oauth/token', client.basic, codeBody(code), 'form')).status).toBe(200);
  });
});
