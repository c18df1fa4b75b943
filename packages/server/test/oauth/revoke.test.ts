import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { issueSecret } from '../../src/credentials/secrets';
import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { endStoreMigration, startStoreMigration } from '../../src/platform/stores';
import { outboxEvents } from '../support/auth-steps';
import { testDatabases } from '../support/databases';
import { type AppFixture, basicHeader, createTestApp, installWithTokens, type StoreFixture, suiteHarness } from '../support/harness';
import { installedInNewStore } from '../support/oauth-apps';
import { shiftableSystemTime } from '../support/system-time';
import {
  type Encoding,
  expectAccessRefused,
  expectAccessWorks,
  expectInvalidClient,
  expectOAuthError,
  expectRefreshRefused,
  obtainTokens,
  postOAuth,
  refreshBody,
} from '../support/token-client';

const SCOPES = ['products:read'];
const ACCESS_MS = 900_000;
const BODY_BYTES = 65536;

describe.each(testDatabases())('POST /oauth/revoke (RFC 7009) on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let client: AppFixture;
  let otherClient: AppFixture;

  beforeAll(async () => {
    client = await createTestApp(h, { required: SCOPES, optional: [] });
    otherClient = await createTestApp(h, { required: SCOPES, optional: [], name: 'Other App' });
  });

  const revoke = (body: object, authorization: string | undefined = client.basic, encoding: Encoding = 'form') =>
    postOAuth(h.app, '/oauth/revoke', authorization, body, encoding);

  /** A fresh installation of the client in a store of its own: the app's first pair. */
  async function installed(app: AppFixture = client): Promise<{ store: StoreFixture; pair: TokenResponse }> {
    return installedInNewStore(h, app, SCOPES);
  }

  const refreshOnce = (pair: TokenResponse, app: AppFixture = client) => obtainTokens(h.app, app.basic, refreshBody(pair.refresh_token));

  async function expectRevokedAnswer(response: Awaited<ReturnType<typeof revoke>>): Promise<void> {
    expect(response.status).toBe(200);
    expect(response.text).toBe('');
    expect(response.headers['cache-control']).toBe('no-store');
  }

  async function installationStatus(installationId: string): Promise<string> {
    return ((await h.db('installations').where({ id: installationId }).first()) as { status: string }).status;
  }

  describe('a refresh token ends its grant', () => {
    it.each<Encoding>(['form', 'json'])('as a %s body: its access token and itself stop working, the installation stays', async (encoding) => {
      const { store: own, pair } = await installed();
      await expectRevokedAnswer(await revoke({ token: pair.refresh_token, token_type_hint: 'refresh_token' }, client.basic, encoding));
      await expectAccessRefused(h.app, own.store.id, pair.access_token);
      await expectRefreshRefused(h.app, client.basic, pair.refresh_token);
      expect(await installationStatus(pair.installation_id)).toBe('installed');
      const grant = await h.db('grants').where({ installation_id: pair.installation_id }).first();
      expect(grant).toMatchObject({ revoked_at: h.clock.now(), revoked_reason: 'revoked_by_client' });
    });

    it('revoking is not uninstalling: no app.uninstalled event is written, and the owner can authorize the app again', async () => {
      const { store: own, pair } = await installed();
      await expectRevokedAnswer(await revoke({ token: pair.refresh_token }));
      expect(await outboxEvents(h, own.store.id, 'app.uninstalled')).toEqual([]);
      const again = await installWithTokens(h, own, client, SCOPES);
      expect(again).toMatchObject({ installation_id: pair.installation_id, installation_generation: pair.installation_generation });
      await expectAccessWorks(h.app, own.store.id, again.access_token);
    });

    it("its successors go with it: revoking the first refresh token after two refreshes ends the latest pair, and only this grant's", async () => {
      const { store: own, pair } = await installed();
      const second = await refreshOnce(pair);
      const third = await refreshOnce(second);
      const { store: elsewhere, pair: unrelated } = await installed();
      await expectRevokedAnswer(await revoke({ token: pair.refresh_token }));
      await expectAccessRefused(h.app, own.store.id, third.access_token);
      await expectRefreshRefused(h.app, client.basic, third.refresh_token);
      await expectAccessWorks(h.app, elsewhere.store.id, unrelated.access_token);
      await expectRevokedAnswer(await revoke({ token: third.refresh_token }));
    });

    it('the hint changes nothing: a refresh token sent with token_type_hint=access_token, or an unknown hint, still ends its grant', async () => {
      for (const hint of ['access_token', 'urn:ietf:params:oauth:token-type:jwt']) {
        const { store: own, pair } = await installed();
        await expectRevokedAnswer(await revoke({ token: pair.refresh_token, token_type_hint: hint }));
        await expectAccessRefused(h.app, own.store.id, pair.access_token);
      }
    });
  });

  describe('an access token ends itself only', () => {
    it.each<Encoding>(['form', 'json'])('as a %s body: the access token is refused, the refresh token still refreshes', async (encoding) => {
      const { store: own, pair } = await installed();
      await expectRevokedAnswer(await revoke({ token: pair.access_token, token_type_hint: 'access_token' }, client.basic, encoding));
      await expectAccessRefused(h.app, own.store.id, pair.access_token);
      const next = await refreshOnce(pair);
      await expectAccessWorks(h.app, own.store.id, next.access_token);
      expect(await outboxEvents(h, own.store.id, 'app.uninstalled')).toEqual([]);
    });

    it('sent with token_type_hint=refresh_token it still ends the access token only', async () => {
      const { store: own, pair } = await installed();
      await expectRevokedAnswer(await revoke({ token: pair.access_token, token_type_hint: 'refresh_token' }));
      await expectAccessRefused(h.app, own.store.id, pair.access_token);
      await expectAccessWorks(h.app, own.store.id, (await refreshOnce(pair)).access_token);
    });
  });

  describe('a token that is not in force answers 200 and changes nothing (RFC 7009 §2.2)', () => {
    it.each([
      ['an unknown access token', () => issueSecret('accessToken')],
      ['an unknown refresh token', () => issueSecret('refreshToken')],
      ['a string that is no token of this server', () => 'eyJhbGciOiJub25lIn0.e30.'],
      ['a token with a broken checksum', () => `svc_rt_${'A'.repeat(49)}`],
    ])('%s', async (_, token) => {
      const before = await h.db('tokens').whereNotNull('revoked_at').count({ n: '*' }).first();
      await expectRevokedAnswer(await revoke({ token: token() }));
      expect(await h.db('tokens').whereNotNull('revoked_at').count({ n: '*' }).first()).toEqual(before);
    });

    it('an access token revoked already, or expired, and a refresh token whose grant is revoked', async () => {
      const { store: own, pair } = await installed();
      await expectRevokedAnswer(await revoke({ token: pair.access_token }));
      await expectRevokedAnswer(await revoke({ token: pair.access_token }));
      const next = await refreshOnce(pair);
      h.clock.advance(ACCESS_MS);
      await expectRevokedAnswer(await revoke({ token: next.access_token }));
      // The expired access token was left as it was: its grant still refreshes.
      const third = await refreshOnce(next);
      await expectRevokedAnswer(await revoke({ token: third.refresh_token }));
      await expectRevokedAnswer(await revoke({ token: third.refresh_token }));
      await expectAccessRefused(h.app, own.store.id, third.access_token);
    });
  });

  describe("another client's token is never revoked", () => {
    it.each([
      ['refresh', (pair: TokenResponse) => pair.refresh_token],
      ['access', (pair: TokenResponse) => pair.access_token],
    ])('a live %s token issued to another client is 400 INVALID_REQUEST and keeps working', async (_, tokenOf) => {
      const { store: own, pair } = await installed(otherClient);
      const response = await revoke({ token: tokenOf(pair) });
      expectOAuthError(response, 400, 'INVALID_REQUEST');
      expect(response.body.error.message).toMatch(/another client/);
      await expectAccessWorks(h.app, own.store.id, pair.access_token);
      await expectAccessWorks(h.app, own.store.id, (await refreshOnce(pair, otherClient)).access_token);
    });

    it("another client's token that is no longer in force answers 200, as an unknown one does", async () => {
      const { pair } = await installed(otherClient);
      await expectRevokedAnswer(await revoke({ token: pair.refresh_token }, otherClient.basic));
      await expectRevokedAnswer(await revoke({ token: pair.refresh_token }));
    });
  });

  describe('client authentication, as at the token endpoint', () => {
    it('no Authorization header is 401 INVALID_CLIENT with WWW-Authenticate: Basic', async () => {
      const response = await postOAuth(h.app, '/oauth/revoke', undefined, { token: issueSecret('refreshToken') }, 'form');
      expectInvalidClient(response);
    });

    it.each<[string, () => string]>([
      ['a wrong secret', () => basicHeader(client.app.id, issueSecret('clientSecret'))],
      ['an unknown client id', () => basicHeader(randomUUID(), client.clientSecret)],
      ['a bearer token', () => `Bearer ${issueSecret('accessToken')}`],
    ])('%s is 401 INVALID_CLIENT with WWW-Authenticate: Basic, and nothing is revoked', async (_, authorization) => {
      const { store: own, pair } = await installed();
      const response = await revoke({ token: pair.refresh_token }, authorization());
      expectInvalidClient(response);
      await expectAccessWorks(h.app, own.store.id, pair.access_token);
    });

    it.each<Encoding>(['form', 'json'])(
      'client credentials in a %s body are 400 INVALID_REQUEST, with or without Basic; nothing is revoked',
      async (encoding) => {
        const { store: own, pair } = await installed();
        const body = { token: pair.refresh_token, client_id: client.app.id, client_secret: client.clientSecret };
        for (const authorization of [client.basic, undefined]) {
          expectOAuthError(await postOAuth(h.app, '/oauth/revoke', authorization, body, encoding), 400, 'INVALID_REQUEST');
        }
        await expectAccessWorks(h.app, own.store.id, pair.access_token);
      },
    );

    it.each([['Basic !!not-base64!!'], [`Basic ${Buffer.from('no-colon-here').toString('base64')}`]])(
      'a malformed Basic header (%s) is 400 INVALID_REQUEST',
      async (authorization) => {
        expectOAuthError(await revoke({ token: issueSecret('refreshToken') }, authorization), 400, 'INVALID_REQUEST');
      },
    );
  });

  describe('the body', () => {
    it.each<[string, object]>([
      ['no token', {}],
      ['an empty token', { token: '' }],
      ['an unknown key', { token: issueSecret('refreshToken'), reason: 'disconnect' }],
      ['a token over 4096 characters', { token: 'x'.repeat(4097) }],
    ])('%s is 400 INVALID_REQUEST', async (_, body) => {
      for (const encoding of ['form', 'json'] as const) expectOAuthError(await revoke(body, client.basic, encoding), 400, 'INVALID_REQUEST');
    });

    it('a repeated token is 400 INVALID_REQUEST', async () => {
      const token = issueSecret('refreshToken');
      const response = await request(h.app).post('/oauth/revoke').set('Authorization', client.basic).type('form').send(`token=${token}&token=${token}`);
      expectOAuthError(response, 400, 'INVALID_REQUEST');
    });

    it('a text body is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
      const response = await request(h.app).post('/oauth/revoke').set('Authorization', client.basic).set('Content-Type', 'text/plain').send('token=x');
      expectOAuthError(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });
  });

  it('while the token’s store is moving: 503 STORE_MIGRATING with Retry-After, nothing revoked; the same request revokes once the move ends', async () => {
    const { store: own, pair } = await installed();
    await startStoreMigration(h.services, own.store.id);
    const moving = await revoke({ token: pair.refresh_token });
    expectOAuthError(moving, 503, 'STORE_MIGRATING');
    expect(moving.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    await endStoreMigration(h.services, own.store.id);
    await expectAccessWorks(h.app, own.store.id, pair.access_token);
    await expectRevokedAnswer(await revoke({ token: pair.refresh_token }));
    await expectAccessRefused(h.app, own.store.id, pair.access_token);
  });

  it('the store API refuses a revoked access token of any store the app is installed in, and leaves the others working', async () => {
    const first = await installed();
    const second = await installed();
    await expectRevokedAnswer(await revoke({ token: first.pair.access_token }));
    await expectAccessRefused(h.app, first.store.store.id, first.pair.access_token);
    await expectAccessWorks(h.app, second.store.store.id, second.pair.access_token);
    // A revoked token presented for another store's path is still just a revoked token: 401, not a hint of the store.
    await expectAccessRefused(h.app, second.store.store.id, first.pair.access_token);
  });
});

describe.each(testDatabases())('POST /oauth/revoke and /oauth/introspect, the per-client rate limit, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 1000, perClient: 3 } });
  const systemTime = shiftableSystemTime();

  it.each(['/oauth/revoke', '/oauth/introspect'])('%s: the 4th request of a client in one 5-second window is 429 RATE_LIMITED', async (path) => {
    const client = await createTestApp(h);
    const other = await createTestApp(h, { name: 'Other App' });
    const body = { token: issueSecret('refreshToken') };
    for (const remaining of [2, 1, 0]) {
      const allowed = await postOAuth(h.app, path, client.basic, body, 'form');
      expect(allowed.status).toBe(200);
      expect(allowed.headers.ratelimit).toMatch(new RegExp(`^"client";r=${remaining};t=\\d+$`));
    }
    const limited = await postOAuth(h.app, path, client.basic, body, 'form');
    expectOAuthError(limited, 429, 'RATE_LIMITED');
    expect(limited.headers['retry-after']).toMatch(/^[1-5]$/);
    expect((await postOAuth(h.app, path, other.basic, body, 'form')).status).toBe(200);
    h.clock.advance(5000);
    systemTime.advance(5000);
    expect((await postOAuth(h.app, path, client.basic, body, 'form')).status).toBe(200);
  });
});

describe.each(testDatabases())('POST /oauth/revoke and /oauth/introspect, refusals before the token is looked at, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let client: AppFixture;

  beforeAll(async () => {
    client = await createTestApp(h);
  });

  it.each(['/oauth/revoke', '/oauth/introspect'])('%s: a body over 65536 bytes is 413 PAYLOAD_TOO_LARGE (form and JSON)', async (path) => {
    const token = 'x'.repeat(BODY_BYTES);
    expectOAuthError(await postOAuth(h.app, path, client.basic, { token }, 'form'), 413, 'PAYLOAD_TOO_LARGE');
    expectOAuthError(await postOAuth(h.app, path, client.basic, { token }, 'json'), 413, 'PAYLOAD_TOO_LARGE');
  });

  it.each(['/oauth/revoke', '/oauth/introspect'])('%s: an API-Version that names no version is 400 UNSUPPORTED_VERSION', async (path) => {
    const response = await postOAuth(h.app, path, client.basic, { token: issueSecret('refreshToken') }, 'form').set('API-Version', '1999-01-01');
    expectOAuthError(response, 400, 'UNSUPPORTED_VERSION');
  });

  it.each(['/oauth/revoke', '/oauth/introspect'])('%s: a GET is 405 METHOD_NOT_ALLOWED', async (path) => {
    const response = await request(h.app).get(path).set('Authorization', client.basic);
    expect(response.status).toBe(405);
  });
});
