import { approveInBrowser } from '@svc/server/test/support/auth-steps';
import { answerConsentForm, authorizeQuery, authorizeUrl, CookieJar, signInAndOpenConsent } from '@svc/server/test/support/browser';
import { testDatabases } from '@svc/server/test/support/databases';
import {
  type AppFixture,
  createTestApp,
  createTestStore,
  installWithTokens,
  REDIRECT_URI,
  RFC7636_VERIFIER,
  type StoreFixture,
  suiteHarness,
} from '@svc/server/test/support/harness';
import { type IssuerServer, listenAsIssuer } from '@svc/server/test/support/issuer';
import {
  AuthorizationCallbackError,
  type AuthorizationServerMetadata,
  type CallbackRefusal,
  createOAuthClient,
  createStoreClient,
  type OAuthClient,
  readAuthorizationCallback,
  StoreApiError,
} from '../src';
import { failureOf } from './support';

/** Runs `read` and returns the refusal it threw. */
function refusalOf(read: () => unknown): CallbackRefusal {
  try {
    read();
  } catch (error) {
    if (error instanceof AuthorizationCallbackError) return error.reason;
    throw error;
  }
  throw new Error('The callback was accepted: a refusal was expected');
}

describe('readAuthorizationCallback: the callback checked before its code is used (RFC 9207 order)', () => {
  const ISSUER = 'https://api.example.com';
  const callback = (query: Record<string, string>) => `https://app.example.com/oauth/callback?${new URLSearchParams(query).toString()}`;
  const good = { code: 'svc_c_abc', state: 'state-1', iss: ISSUER };

  it('answers the code when iss and state are the expected ones (URL, URL object or query)', () => {
    expect(readAuthorizationCallback(callback(good), { state: 'state-1', issuer: ISSUER })).toEqual({ code: 'svc_c_abc', state: 'state-1', iss: ISSUER });
    expect(readAuthorizationCallback(new URL(callback(good)), { state: 'state-1', issuer: ISSUER }).code).toBe('svc_c_abc');
    expect(readAuthorizationCallback(new URLSearchParams(good), { state: 'state-1', issuer: ISSUER }).code).toBe('svc_c_abc');
    expect(readAuthorizationCallback(`?${new URLSearchParams(good).toString()}`, { state: 'state-1', issuer: ISSUER }).code).toBe('svc_c_abc');
  });

  it.each<[string, Record<string, string>, CallbackRefusal]>([
    ['another issuer', { ...good, iss: 'https://evil.example' }, 'ISSUER_MISMATCH'],
    ['an issuer with a trailing slash', { ...good, iss: `${ISSUER}/` }, 'ISSUER_MISMATCH'],
    ['no iss', { code: 'svc_c_abc', state: 'state-1' }, 'ISSUER_MISSING'],
    ['another state', { ...good, state: 'state-2' }, 'STATE_MISMATCH'],
    ['no state', { code: 'svc_c_abc', iss: ISSUER }, 'STATE_MISMATCH'],
    ['a denial', { error: 'access_denied', state: 'state-1', iss: ISSUER }, 'ACCESS_DENIED'],
    ['another error', { error: 'server_error', state: 'state-1', iss: ISSUER }, 'AUTHORIZATION_ERROR'],
    ['no code', { state: 'state-1', iss: ISSUER }, 'CODE_MISSING'],
    ['the wrong issuer and the wrong state: iss is checked first', { ...good, iss: 'https://evil.example', state: 'x' }, 'ISSUER_MISMATCH'],
    ['a denial from the wrong issuer', { error: 'access_denied', state: 'state-1', iss: 'https://evil.example' }, 'ISSUER_MISMATCH'],
  ])('refuses %s', (_, query, reason) => {
    expect(refusalOf(() => readAuthorizationCallback(callback(query), { state: 'state-1', issuer: ISSUER }))).toBe(reason);
  });

  it('refuses iss given twice', () => {
    const twice = `${callback(good)}&iss=${encodeURIComponent('https://evil.example')}`;
    expect(refusalOf(() => readAuthorizationCallback(twice, { state: 'state-1', issuer: ISSUER }))).toBe('ISSUER_MISMATCH');
  });

  it('takes a callback without iss only from a server that does not say it sends one, and ignores iss when no issuer is given', () => {
    const withoutIss = callback({ code: 'svc_c_abc', state: 'state-1' });
    expect(readAuthorizationCallback(withoutIss, { state: 'state-1', issuer: ISSUER, issuerParameterSupported: false }).code).toBe('svc_c_abc');
    expect(
      refusalOf(() =>
        readAuthorizationCallback(callback({ ...good, iss: 'https://evil.example' }), { state: 'state-1', issuer: ISSUER, issuerParameterSupported: false }),
      ),
    ).toBe('ISSUER_MISMATCH');
    expect(readAuthorizationCallback(callback({ ...good, iss: 'https://evil.example' }), { state: 'state-1' }).code).toBe('svc_c_abc');
  });

  it('names the two issuers in its message', () => {
    try {
      readAuthorizationCallback(callback({ ...good, iss: 'https://evil.example' }), { state: 'state-1', issuer: ISSUER });
    } catch (error) {
      expect(error).toBeInstanceOf(AuthorizationCallbackError);
      expect((error as Error).message).toBe(
        "The callback's iss (https://evil.example) is not the issuer the authorization started at (https://api.example.com).",
      );
    }
  });
});

describe.each(testDatabases())('the SDK and the standard OAuth endpoints against a real server ($name)', (database) => {
  const h = suiteHarness(database);
  let server: IssuerServer;
  let client: AppFixture;
  let oauth: OAuthClient;
  let metadata: AuthorizationServerMetadata;

  beforeAll(async () => {
    server = await listenAsIssuer(h);
    client = await createTestApp(h, { required: ['products:read'], optional: [] });
    oauth = createOAuthClient({ baseUrl: server.issuer, clientId: client.app.id, clientSecret: client.clientSecret });
    metadata = await oauth.metadata();
  });

  const me = (store: StoreFixture, accessToken: string) =>
    createStoreClient({ baseUrl: server.issuer, accessToken }).GET('/stores/{storeId}/v1/me', { params: { path: { storeId: store.store.id } } });

  it('metadata() answers the document: the issuer is the URL the SDK was given, every endpoint under it', () => {
    expect(metadata).toMatchObject({
      issuer: server.issuer,
      token_endpoint: `${server.issuer}/oauth/token`,
      revocation_endpoint: `${server.issuer}/oauth/revoke`,
      introspection_endpoint: `${server.issuer}/oauth/introspect`,
      authorization_response_iss_parameter_supported: true,
    });
  });

  it('a real approval passes the check with the metadata’s issuer, and its code is exchanged', async () => {
    const store = await createTestStore(h);
    const { callback, query } = await approveInBrowser(server.app, store, client, ['products:read']);
    const { code, iss } = readAuthorizationCallback(callback, {
      state: query.state as string,
      issuer: metadata.issuer,
      issuerParameterSupported: metadata.authorization_response_iss_parameter_supported,
    });
    expect(iss).toBe(server.issuer);
    const pair = await oauth.exchangeCode({ code, redirectUri: REDIRECT_URI, codeVerifier: RFC7636_VERIFIER });
    expect((await me(store, pair.access_token)).response.status).toBe(200);
  });

  it('a real approval checked against another issuer is refused before its code is used', async () => {
    const store = await createTestStore(h);
    const { callback, query } = await approveInBrowser(server.app, store, client, ['products:read']);
    const reason = refusalOf(() => readAuthorizationCallback(callback, { state: query.state as string, issuer: 'https://another-server.example' }));
    expect(reason).toBe('ISSUER_MISMATCH');
  });

  it('a real denial is ACCESS_DENIED, once its iss is checked', async () => {
    const store = await createTestStore(h);
    const jar = new CookieJar();
    const query = authorizeQuery(store, client, ['products:read']);
    const consent = await signInAndOpenConsent(server.app, jar, store, authorizeUrl(query));
    const denied = await answerConsentForm(server.app, jar, consent.text, 'deny');
    const location = denied.headers.location as string;
    expect(refusalOf(() => readAuthorizationCallback(location, { state: query.state as string, issuer: metadata.issuer }))).toBe('ACCESS_DENIED');
  });

  it('introspect() and revoke(): a refresh token revoked ends its grant; introspection says so', async () => {
    const store = await createTestStore(h);
    const pair = await installWithTokens(h, store, client, ['products:read']);
    expect(await oauth.introspect(pair.access_token)).toMatchObject({ active: true, token_type: 'Bearer', client_id: client.app.id, store_id: store.store.id });
    expect(await oauth.introspect(pair.refresh_token, 'refresh_token')).toMatchObject({ active: true, iss: server.issuer });
    await expect(oauth.revoke(pair.refresh_token, 'refresh_token')).resolves.toBeUndefined();
    expect(await oauth.introspect(pair.access_token)).toEqual({ active: false });
    expect(await oauth.introspect(pair.refresh_token)).toEqual({ active: false });
    const refused = await failureOf(() => me(store, pair.access_token));
    expect({ status: refused.status, code: refused.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    // Revoking again, or a token the service never issued, resolves as well (RFC 7009 §2.2).
    await expect(oauth.revoke(pair.refresh_token)).resolves.toBeUndefined();
    await expect(oauth.revoke('not-a-token-of-this-service')).resolves.toBeUndefined();
  });

  it('revoke() of an access token ends that token only; its refresh token still refreshes', async () => {
    const store = await createTestStore(h);
    const pair = await installWithTokens(h, store, client, ['products:read']);
    await oauth.revoke(pair.access_token, 'access_token');
    expect((await failureOf(() => me(store, pair.access_token))).status).toBe(401);
    const next = await oauth.token({ grant_type: 'refresh_token', refresh_token: pair.refresh_token });
    expect((await me(store, next.access_token)).response.status).toBe(200);
  });

  it("revoke() of another app's token rejects with StoreApiError 400 INVALID_REQUEST; introspect() says inactive", async () => {
    const other = await createTestApp(h, { required: ['products:read'], optional: [], name: 'Other App' });
    const store = await createTestStore(h);
    const pair = await installWithTokens(h, store, other, ['products:read']);
    const error = await failureOf(() => oauth.revoke(pair.refresh_token));
    expect(error).toBeInstanceOf(StoreApiError);
    expect({ status: error.status, code: error.code }).toEqual({ status: 400, code: 'INVALID_REQUEST' });
    expect(await oauth.introspect(pair.access_token)).toEqual({ active: false });
    expect((await me(store, pair.access_token)).response.status).toBe(200);
  });
});
