import { randomBytes, randomUUID } from 'node:crypto';
import request from 'supertest';
import { issueSecret } from '../../src/credentials/secrets';
import { testDatabases } from '../support/databases';
import {
  type AppFixture,
  approveAndGetCode,
  basicHeader,
  createTestApp,
  createTestStore,
  RFC7636_VERIFIER,
  type StoreFixture,
  s256,
  suiteHarness,
} from '../support/harness';
import { stockSyncApp } from '../support/oauth-apps';
import { shiftableSystemTime } from '../support/system-time';
import {
  codeBody,
  type Encoding,
  expectAccessRefused,
  expectAccessWorks,
  expectInvalidClient,
  expectOAuthError,
  expectOneSharedPair,
  expectRefreshRefused,
  postToken,
  refreshBody,
  type TokenBody,
  tokenResponse,
} from '../support/token-client';

const SCOPES = ['products:read', 'products:write'];
const CODE_LIFETIME_MS = 120_000;
const BODY_BYTES = 65536;

/** A verifier of `length` characters from the unreserved set (RFC 7636 §4.1). */
const verifierOf = (length: number) => randomBytes(length).toString('base64url').slice(0, length);

/** A raw body of exactly `bytes` bytes: the exchange body with its verifier padded. */
function bodyOfSize(code: string, encoding: Encoding, bytes: number): string {
  const serialize = (verifier: string) =>
    encoding === 'json'
      ? JSON.stringify(codeBody(code, { code_verifier: verifier }))
      : new URLSearchParams(codeBody(code, { code_verifier: verifier })).toString();
  return serialize('v'.repeat(bytes - serialize('').length));
}

describe.each(testDatabases())('POST /oauth/token, the authorization-code grant, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;
  let client: AppFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
    client = await stockSyncApp(h);
  });

  const newCode = (challenge?: string) => approveAndGetCode(h, store, client, SCOPES, challenge);
  const exchange = (body: object, encoding: Encoding = 'form') => postToken(h.app, client.basic, body, encoding);

  describe('the exchange', () => {
    it.each<Encoding>(['form', 'json'])('exchanges a code sent as a %s body for a token pair', async (encoding) => {
      const response = await exchange(codeBody(await newCode()), encoding);
      expect(response.status).toBe(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toEqual(tokenResponse({ scope: 'products:read products:write', storeId: store.store.id }));
      await expectAccessWorks(h.app, store.store.id, response.body.access_token);
    });
  });

  describe('client authentication: HTTP Basic only', () => {
    it.each<[string, boolean]>([
      ['with a Basic header', true],
      ['without a Basic header', false],
    ])('client credentials in the body are 400 INVALID_REQUEST (%s), and the code stays unused', async (_, withBasic) => {
      const code = await newCode();
      const withCredentials = { ...codeBody(code), client_id: client.app.id, client_secret: client.clientSecret };
      const authorization = withBasic ? client.basic : undefined;
      // "Credentials are never sent in the body": a malformed request, never read as credentials.
      expectOAuthError(await postToken(h.app, authorization, withCredentials, 'form'), 400, 'INVALID_REQUEST');
      expectOAuthError(await postToken(h.app, authorization, withCredentials, 'json'), 400, 'INVALID_REQUEST');
      expect((await exchange(codeBody(code))).status).toBe(200);
    });

    it.each<[string, Record<string, string>]>([
      ['an unknown key', { grant_type: 'refresh_token', refresh_token: 'svc_rt_x', state: 'x' }],
      ['an unsupported grant', { grant_type: 'client_credentials' }],
      ['a missing key', { grant_type: 'authorization_code' }],
    ])('a client that does not authenticate is 401 INVALID_CLIENT before its body is judged (RFC 6749 §5.2): %s', async (_, body) => {
      for (const authorization of [undefined, basicHeader(client.app.id, issueSecret('clientSecret')), basicHeader(randomUUID(), client.clientSecret)]) {
        expectInvalidClient(await postToken(h.app, authorization, body));
      }
    });

    it('a request without an Authorization header is 401 INVALID_CLIENT with WWW-Authenticate: Basic', async () => {
      const response = await postToken(h.app, undefined, codeBody(await newCode()));
      expectInvalidClient(response);
    });

    it.each<[string, () => string]>([
      ['a wrong secret', () => basicHeader(client.app.id, issueSecret('clientSecret'))],
      ['an unknown client id', () => basicHeader(randomUUID(), client.clientSecret)],
    ])('%s is 401 INVALID_CLIENT with WWW-Authenticate: Basic', async (_, authorization) => {
      const response = await postToken(h.app, authorization(), codeBody(await newCode()));
      expectInvalidClient(response);
    });

    it.each([['Basic !!not-base64!!'], [`Basic ${Buffer.from('no-colon-here').toString('base64')}`]])(
      'a malformed Basic header (%s) is 400 INVALID_REQUEST',
      async (authorization) => {
        expectOAuthError(await postToken(h.app, authorization, codeBody(await newCode())), 400, 'INVALID_REQUEST');
      },
    );
  });

  describe('the body', () => {
    it.each<Encoding>(['form', 'json'])('an unknown key in a %s body is INVALID_REQUEST', async (encoding) => {
      expectOAuthError(await exchange({ ...codeBody(await newCode()), state: 'xyzSTATE-0123456789abcdef' }, encoding), 400, 'INVALID_REQUEST');
    });

    it.each(['client_credentials', 'password', 'implicit', 'urn:ietf:params:oauth:grant-type:device_code'])(
      'grant_type=%s is INVALID_GRANT_TYPE',
      async (grantType) => {
        expectOAuthError(await exchange({ grant_type: grantType }), 400, 'INVALID_GRANT_TYPE');
      },
    );

    it.each(['code', 'redirect_uri', 'code_verifier'])('an authorization_code request without %s is INVALID_GRANT', async (key) => {
      const body: TokenBody = codeBody(await newCode());
      delete body[key];
      expectOAuthError(await exchange(body), 400, 'INVALID_GRANT');
    });

    it('a code without the svc_c_ prefix is INVALID_GRANT', async () => {
      const code = await newCode();
      expectOAuthError(await exchange(codeBody(code.replace(/^svc_c_/, 'svc_x_'))), 400, 'INVALID_GRANT');
      expectOAuthError(await exchange(codeBody(issueSecret('refreshToken'))), 400, 'INVALID_GRANT');
    });

    it.each([42, 129])('a code_verifier of %i characters is INVALID_REQUEST', async (length) => {
      const verifier = verifierOf(length);
      const code = await newCode(s256(verifier));
      expectOAuthError(await exchange(codeBody(code, { code_verifier: verifier })), 400, 'INVALID_REQUEST');
    });

    it.each([43, 128])('a code_verifier of %i characters is accepted', async (length) => {
      const verifier = verifierOf(length);
      const code = await newCode(s256(verifier));
      expect((await exchange(codeBody(code, { code_verifier: verifier }))).status).toBe(200);
    });

    it.each<Encoding>(['json', 'form'])('a %s body over 65536 bytes is 413 PAYLOAD_TOO_LARGE (65536 bytes are read)', async (encoding) => {
      const code = await newCode();
      const send = (bytes: number) =>
        request(h.app)
          .post('/oauth/token')
          .set('Authorization', client.basic)
          .type(encoding)
          .send(bodyOfSize(code, encoding, bytes));
      // Exactly 65536 bytes is read and checked: its verifier is too long.
      expectOAuthError(await send(BODY_BYTES), 400, 'INVALID_REQUEST');
      expectOAuthError(await send(BODY_BYTES + 1), 413, 'PAYLOAD_TOO_LARGE');
    });
  });

  describe('the code', () => {
    it('an unknown code is INVALID_CODE', async () => {
      expectOAuthError(await exchange(codeBody(issueSecret('authorizationCode'))), 400, 'INVALID_CODE');
    });

    it("another client's code is INVALID_CODE", async () => {
      const other = await createTestApp(h, { name: 'Other App' });
      expectOAuthError(await postToken(h.app, other.basic, codeBody(await newCode())), 400, 'INVALID_CODE');
    });

    it('a redirect_uri other than the authorization request’s is REDIRECT_URI_MISMATCH', async () => {
      // Registered for the version, but not the one the authorization request named.
      const response = await exchange(codeBody(await newCode(), { redirect_uri: 'http://localhost:8787/callback' }));
      expectOAuthError(response, 400, 'REDIRECT_URI_MISMATCH');
    });

    it('a code_verifier whose S256 hash is not the code_challenge is PKCE_MISMATCH', async () => {
      const wrong = RFC7636_VERIFIER.replace(/^d/, 'e');
      expectOAuthError(await exchange(codeBody(await newCode(), { code_verifier: wrong })), 400, 'PKCE_MISMATCH');
    });

    it('a code is exchanged up to 120 seconds after it was issued (at 119.999 s)', async () => {
      const code = await newCode();
      h.clock.advance(CODE_LIFETIME_MS - 1);
      expect((await exchange(codeBody(code))).status).toBe(200);
    });

    it('a code 120 seconds old is INVALID_CODE', async () => {
      const code = await newCode();
      h.clock.advance(CODE_LIFETIME_MS);
      expectOAuthError(await exchange(codeBody(code)), 400, 'INVALID_CODE');
    });

    it.each<[string, (code: string, accessToken: string) => Promise<TokenBody>]>([
      [
        'the same body, after the app used the tokens',
        async (code, accessToken) => {
          await expectAccessWorks(h.app, store.store.id, accessToken);
          return codeBody(code);
        },
      ],
      ['another body, at once', async (code) => codeBody(code, { redirect_uri: 'http://localhost:8787/callback' })],
    ])('a second use of a code (%s) is INVALID_CODE and revokes the tokens of the first use', async (_, secondBody) => {
      const code = await newCode();
      const first = await exchange(codeBody(code));
      expect(first.status).toBe(200);
      expectOAuthError(await exchange(await secondBody(code, first.body.access_token)), 400, 'INVALID_CODE');
      await expectAccessRefused(h.app, store.store.id, first.body.access_token);
      await expectRefreshRefused(h.app, client.basic, first.body.refresh_token);
    });

    it('once a second use revoked them, the tokens of the first use are never sent again: the first body resent at once is INVALID_CODE', async () => {
      const code = await newCode();
      const first = await exchange(codeBody(code));
      expect(first.status).toBe(200);
      expectOAuthError(await exchange(codeBody(code, { redirect_uri: 'http://localhost:8787/callback' })), 400, 'INVALID_CODE');

      const resent = await exchange(codeBody(code));
      expectOAuthError(resent, 400, 'INVALID_CODE');
      expect(resent.body).not.toHaveProperty('access_token');
    });

    it('identical concurrent exchanges of one code are one operation: every caller gets the same pair and nothing is revoked', async () => {
      const code = await newCode();
      const responses = await Promise.all(Array.from({ length: 5 }, (_, i) => exchange(codeBody(code), i % 2 === 0 ? 'form' : 'json')));
      const pair = expectOneSharedPair(responses);
      await expectAccessWorks(h.app, store.store.id, pair.access_token);
    });
  });

  it('every response, success or error, carries Cache-Control: no-store', async () => {
    const code = await newCode();
    const responses = [
      await exchange(codeBody(code)),
      await exchange({ ...codeBody(code), client_secret: client.clientSecret }),
      await exchange({ grant_type: 'client_credentials' }),
      await exchange({ grant_type: 'refresh_token' }),
      await exchange(refreshBody(issueSecret('refreshToken'))),
      await postToken(h.app, undefined, codeBody(code)),
      await postToken(h.app, 'Basic %%%', codeBody(code)),
      await request(h.app)
        .post('/oauth/token')
        .set('Authorization', client.basic)
        .type('json')
        .send(bodyOfSize(code, 'json', BODY_BYTES + 1)),
    ];
    expect(responses.map((response) => response.status)).toEqual([200, 400, 400, 400, 400, 401, 400, 413]);
    for (const response of responses) expect(response.headers['cache-control']).toBe('no-store');
  });
});

describe.each(testDatabases())('POST /oauth/token, the per-client rate limit, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 1000, perClient: 3 } });
  const systemTime = shiftableSystemTime();
  let store: StoreFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
  });

  it('the 4th request of a client in one 5-second window is 429 RATE_LIMITED; the next window takes requests again', async () => {
    const client = await createTestApp(h);
    const other = await createTestApp(h, { name: 'Other App' });
    const unknownRefresh = refreshBody(issueSecret('refreshToken'));
    for (const remaining of [2, 1, 0]) {
      const allowed = await postToken(h.app, client.basic, unknownRefresh);
      expectOAuthError(allowed, 400, 'INVALID_REFRESH_TOKEN');
      expect(allowed.headers.ratelimit).toMatch(new RegExp(`^"client";r=${remaining};t=\\d+$`));
      expect(allowed.headers['ratelimit-policy']).toBe('"client";q=3;w=5');
    }

    const limited = await postToken(h.app, client.basic, unknownRefresh);
    expectOAuthError(limited, 429, 'RATE_LIMITED');
    expect(limited.headers['retry-after']).toMatch(/^[1-5]$/);
    expect(limited.headers.ratelimit).toMatch(/^"client";r=0;t=[1-5]$/);
    expect(limited.headers['ratelimit-policy']).toBe('"client";q=3;w=5');

    // The quota is the client's: another client is not limited by it.
    expectOAuthError(await postToken(h.app, other.basic, unknownRefresh), 400, 'INVALID_REFRESH_TOKEN');

    h.clock.advance(5000);
    systemTime.advance(5000);
    const code = await approveAndGetCode(h, store, client, ['products:read']);
    const again = await postToken(h.app, client.basic, codeBody(code));
    expect(again.status).toBe(200);
    expect(again.headers['ratelimit-policy']).toBe('"client";q=3;w=5');
  });
});
