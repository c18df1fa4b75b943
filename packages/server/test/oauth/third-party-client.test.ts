import { createHash, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type AccessToken, AuthorizationCode, type ModuleOptions } from 'simple-oauth2';
import { SHARE_WINDOW_MS } from '../../src/oauth/operations';
import { answerConsentForm, CookieJar, signInAndOpenConsent } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, createTestStore, REDIRECT_URI, type StoreFixture, suiteHarness } from '../support/harness';
import { type Listening, listen } from '../support/listen';
import { tokenResponse } from '../support/token-client';

/**
 * The OAuth server driven by a client this project did not write: simple-oauth2 5.1.0 (Wreck
 * underneath) against the server listening on a real port. The browser steps (sign-in, consent)
 * use the project's form helpers; everything the app itself sends comes from the library.
 */

const REQUIRED = ['products:read'];
const OPTIONAL = ['products:write', 'orders:read'];
const ACCESS_MS = 900 * 1000;

/** PKCE made here (RFC 7636 §4.1, §4.2), independent of the server's pkce.ts: a 64-character verifier and its S256 challenge. */
function newPkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(48).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier, 'ascii').digest('base64url') };
}

interface ErrorBody {
  error: { code: string; message: string; details?: { location: string; field: string }[] };
  meta: { request_id: string };
}

/** What simple-oauth2 rejects with on an HTTP error: a @hapi/boom error carrying Wreck's response. */
interface LibraryHttpError {
  isBoom: true;
  output: { statusCode: number };
  data: { isResponseError: true; payload: ErrorBody; headers: IncomingHttpHeaders };
}

function isLibraryHttpError(error: unknown): error is LibraryHttpError {
  if (typeof error !== 'object' || error === null || !('isBoom' in error) || !('data' in error)) return false;
  const data = (error as { data: unknown }).data;
  return typeof data === 'object' && data !== null && 'payload' in data && 'headers' in data;
}

/** The library's rejection for a call expected to fail at the server. */
async function rejectionOf(call: Promise<unknown>): Promise<LibraryHttpError> {
  try {
    await call;
  } catch (error) {
    if (isLibraryHttpError(error)) return error;
    throw error;
  }
  throw new Error('The library resolved where the server should have refused');
}

function expectServerError(error: LibraryHttpError, status: number, code: string): void {
  expect(error.output.statusCode).toBe(status);
  expect(error.data.payload.error.code).toBe(code);
  expect(error.data.payload.meta.request_id).toEqual(expect.any(String));
  expect(error.data.headers['cache-control']).toBe('no-store');
}

const field = (token: AccessToken, name: string): string => {
  const value = token.token[name];
  if (typeof value !== 'string') throw new Error(`The token has no string ${name}`);
  return value;
};

const scopeSet = (token: AccessToken) => field(token, 'scope').split(' ').sort();

/** The token response as the server sent it (without the expires_at the library adds on parsing). */
const serverFields = (token: AccessToken) => Object.fromEntries(Object.entries(token.token).filter(([name]) => name !== 'expires_at'));

/** The instant (epoch ms) the library computed from `expires_in` when it parsed the response. */
function expiresAtOf(token: AccessToken): number {
  const value = token.token.expires_at;
  if (!(value instanceof Date)) throw new Error('The library set no expires_at');
  return value.getTime();
}

/** The library's own expiry check, `expired(window)`, read as if the wall clock showed `instant` (no waiting). */
function expiredAt(token: AccessToken, instant: number, windowSeconds?: number): boolean {
  const now = jest.spyOn(Date, 'now').mockReturnValue(instant);
  try {
    return token.expired(windowSeconds);
  } finally {
    now.mockRestore();
  }
}

describe.each(testDatabases())('a third-party OAuth client (simple-oauth2) against the listening server on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  h.atEnd(() => service?.close());
  let service: Listening;
  let client: AppFixture;

  beforeAll(async () => {
    service = await listen(h.app);
    client = await createTestApp(h, { required: REQUIRED, optional: OPTIONAL });
  });

  /** The library configured as the task's app would: Basic client authentication, form bodies. */
  function oauthClient(overrides: { secret?: string; options?: ModuleOptions['options'] } = {}): AuthorizationCode {
    return new AuthorizationCode({
      client: { id: client.app.id, secret: overrides.secret ?? client.clientSecret },
      auth: { tokenHost: service.origin, tokenPath: '/oauth/token', authorizePath: '/oauth/authorize' },
      options: overrides.options ?? { authorizationMethod: 'header', bodyFormat: 'form' },
    });
  }

  /** The authorize URL as the library builds it; PKCE and store_id go through its pass-through parameters. */
  function libraryAuthorizeUrl(oauth: AuthorizationCode, store: StoreFixture, scopes: string[], challenge: string, state: string): URL {
    const params = { redirect_uri: REDIRECT_URI, scope: scopes, state, code_challenge: challenge, code_challenge_method: 'S256', store_id: store.store.id };
    return new URL(oauth.authorizeURL(params));
  }

  /** The store owner follows the library's URL, signs in and approves (keeping `kept` of the optional scopes): the code. */
  async function authorize(oauth: AuthorizationCode, store: StoreFixture, challenge: string, kept: string[] = OPTIONAL): Promise<string> {
    const state = randomBytes(24).toString('base64url');
    const url = libraryAuthorizeUrl(oauth, store, [...REQUIRED, ...OPTIONAL], challenge, state);
    const jar = new CookieJar();
    const consent = await signInAndOpenConsent(h.app, jar, store, `${url.pathname}${url.search}`);
    expect(consent.status).toBe(200);
    const answered = await answerConsentForm(h.app, jar, consent.text, 'approve', kept);
    expect(answered.status).toBe(302);
    const callback = new URL(answered.headers.location as string);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect(callback.searchParams.get('state')).toBe(state);
    return callback.searchParams.get('code') as string;
  }

  /** The code exchange the library makes; `code_verifier` rides along as an extra token parameter. */
  function exchange(oauth: AuthorizationCode, code: string, verifier: string): Promise<AccessToken> {
    const params = { code, redirect_uri: REDIRECT_URI, code_verifier: verifier };
    return oauth.getToken(params);
  }

  const callMe = (store: StoreFixture, accessToken: string) =>
    fetch(`${service.origin}/stores/${store.store.id}/v1/me`, { headers: { Authorization: `Bearer ${accessToken}` } });

  async function expectAccepted(store: StoreFixture, token: AccessToken): Promise<void> {
    const me = await callMe(store, field(token, 'access_token'));
    expect(me.status).toBe(200);
    const body = (await me.json()) as { data: { store: { id: string }; app: { id: string }; scopes: string[] } };
    expect(body.data.store.id).toBe(store.store.id);
    expect(body.data.app.id).toBe(client.app.id);
    expect([...body.data.scopes].sort()).toEqual(scopeSet(token));
  }

  async function expectUnauthenticated(store: StoreFixture, accessToken: string): Promise<void> {
    const me = await callMe(store, accessToken);
    expect(me.status).toBe(401);
    expect(me.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const body = (await me.json()) as ErrorBody;
    expect(body.error.code).toBe('UNAUTHENTICATED');
    expect(body.meta.request_id).toBe(me.headers.get('x-request-id'));
  }

  it("the library's authorize URL is accepted as built: response_type, client_id, space-separated scope, state, PKCE S256 and store_id", async () => {
    const store = await createTestStore(h);
    const oauth = oauthClient();
    const { challenge } = newPkce();
    const url = libraryAuthorizeUrl(oauth, store, [...REQUIRED, ...OPTIONAL], challenge, 'state-from-the-library-0123');
    expect(url.origin).toBe(service.origin);
    expect(url.pathname).toBe('/oauth/authorize');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: client.app.id,
      redirect_uri: REDIRECT_URI,
      scope: 'products:read products:write orders:read',
      state: 'state-from-the-library-0123',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      store_id: store.store.id,
    });
    // The library writes spaces as "+": the server must read that as the scope separator.
    expect(url.search).toContain('scope=products%3Aread+products%3Awrite+orders%3Aread');

    // Signed out, the real server sends the browser to the dashboard login, which returns here.
    const signedOut = await fetch(url, { redirect: 'manual' });
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.get('location')).toMatch(/^\/dashboard\/login\?return_to=%2Foauth%2Fauthorize%3F/);
  });

  it('simple-oauth2 exchanges the code with its PKCE verifier, calls /me, refreshes; the new token works and the previous access token is 401', async () => {
    const store = await createTestStore(h);
    const oauth = oauthClient();
    const pkce = newPkce();
    const code = await authorize(oauth, store, pkce.challenge, ['products:write']);
    expect(code).toMatch(/^svc_c_/);

    const first = await exchange(oauth, code, pkce.verifier);
    // The library adds expires_at from expires_in; everything else is the server's response as sent.
    expect(first.token).toEqual({ ...tokenResponse({ scope: 'products:read products:write', storeId: store.store.id }), expires_at: expect.any(Date) });
    await expectAccepted(store, first);

    const second = await first.refresh();
    expect(field(second, 'access_token')).not.toBe(field(first, 'access_token'));
    expect(field(second, 'refresh_token')).not.toBe(field(first, 'refresh_token'));
    expect(field(second, 'operation_id')).not.toBe(field(first, 'operation_id'));
    expect(second.token).toMatchObject({ token_type: 'Bearer', expires_in: 900, installation_id: first.token.installation_id, grant_revision: 1 });
    expect(scopeSet(second)).toEqual(scopeSet(first));
    await expectAccepted(store, second);
    await expectUnauthenticated(store, field(first, 'access_token'));
  });

  it("the library's refreshes follow the refresh rules: concurrent ones share one pair, a resend is REFRESH_ALREADY_USED, a replay after the successor was used is TOKEN_REUSE_DETECTED", async () => {
    const store = await createTestStore(h);
    const oauth = oauthClient();
    const pkce = newPkce();
    const first = await exchange(oauth, await authorize(oauth, store, pkce.challenge), pkce.verifier);

    // Two workers of the app refresh the same AccessToken at once: one operation, one pair.
    const [second, twin] = await Promise.all([first.refresh(), first.refresh()]);
    expect(serverFields(twin)).toEqual(serverFields(second));

    // The library keeps the old AccessToken object; refreshing it again later resends a used
    // refresh token whose successor is still unused: refused, nothing revoked.
    h.clock.advance(SHARE_WINDOW_MS);
    expectServerError(await rejectionOf(first.refresh()), 400, 'REFRESH_ALREADY_USED');
    await expectAccepted(store, second);

    // Its successor has now been used: the same resend is a replay, and the whole grant is revoked.
    expectServerError(await rejectionOf(first.refresh()), 400, 'TOKEN_REUSE_DETECTED');
    await expectUnauthenticated(store, field(second, 'access_token'));
    expectServerError(await rejectionOf(second.refresh()), 400, 'INVALID_REFRESH_TOKEN');
  });

  it("the library's expiry check agrees with expires_in 900: it counts the token valid for the 900 seconds the server accepts it", async () => {
    const store = await createTestStore(h);
    const oauth = oauthClient();
    const pkce = newPkce();
    const code = await authorize(oauth, store, pkce.challenge);
    const before = Date.now();
    const token = await exchange(oauth, code, pkce.verifier);
    const after = Date.now();

    const expiresAt = expiresAtOf(token);
    expect(expiresAt).toBeGreaterThanOrEqual(before + ACCESS_MS);
    expect(expiresAt).toBeLessThanOrEqual(after + ACCESS_MS);

    // The library's own check at chosen instants: valid until expires_at; a 60 s window flags it 60 s earlier.
    expect(expiredAt(token, expiresAt - 1)).toBe(false);
    expect(expiredAt(token, expiresAt)).toBe(true);
    expect(expiredAt(token, expiresAt - 60_001, 60)).toBe(false);
    expect(expiredAt(token, expiresAt - 60_000, 60)).toBe(true);

    // The server's side of the same 900 seconds, on its manual clock.
    h.clock.advance(ACCESS_MS - 1);
    await expectAccepted(store, token);
    h.clock.advance(1);
    await expectUnauthenticated(store, field(token, 'access_token'));

    // What the library does next when expired() says so: refresh, and carry on.
    const refreshed = await token.refresh();
    expect(expiredAt(refreshed, expiresAtOf(refreshed) - 1)).toBe(false);
    await expectAccepted(store, refreshed);
  });

  it('a server error surfaces through the library: a wrong code_verifier rejects with 400 and PKCE_MISMATCH in error.data.payload', async () => {
    const store = await createTestStore(h);
    const oauth = oauthClient();
    const code = await authorize(oauth, store, newPkce().challenge);
    const error = await rejectionOf(exchange(oauth, code, newPkce().verifier));
    expect(error.isBoom).toBe(true);
    expect(error.data.isResponseError).toBe(true);
    expectServerError(error, 400, 'PKCE_MISMATCH');
    expect(error.data.headers['x-request-id']).toBe(error.data.payload.meta.request_id);
  });

  it('a wrong client secret rejects with 401 INVALID_CLIENT and WWW-Authenticate: Basic in the error the library exposes', async () => {
    const store = await createTestStore(h);
    const pkce = newPkce();
    const code = await authorize(oauthClient(), store, pkce.challenge);
    const wrongSecret = `svc_cs_${randomBytes(32).toString('base64url')}`;
    const error = await rejectionOf(exchange(oauthClient({ secret: wrongSecret }), code, pkce.verifier));
    expectServerError(error, 401, 'INVALID_CLIENT');
    expect(error.data.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it("the library's body authentication (client_id and client_secret in the body) is refused with 400 INVALID_REQUEST, as documented", async () => {
    const store = await createTestStore(h);
    const pkce = newPkce();
    const code = await authorize(oauthClient(), store, pkce.challenge);
    const error = await rejectionOf(exchange(oauthClient({ options: { authorizationMethod: 'body', bodyFormat: 'form' } }), code, pkce.verifier));
    expectServerError(error, 400, 'INVALID_REQUEST');
    expect(error.data.payload.error.details?.map((detail) => `${detail.location}${detail.field}`).sort()).toEqual(['body/client_id', 'body/client_secret']);
  });

  it("the library's JSON bodies (bodyFormat json) exchange and refresh as form bodies do", async () => {
    const store = await createTestStore(h);
    const oauth = oauthClient({ options: { authorizationMethod: 'header', bodyFormat: 'json' } });
    const pkce = newPkce();
    const code = await authorize(oauth, store, pkce.challenge, []);
    const token = await exchange(oauth, code, pkce.verifier);
    expect(field(token, 'scope')).toBe('products:read');
    await expectAccepted(store, token);
    const refreshed = await token.refresh();
    await expectAccepted(store, refreshed);
    await expectUnauthenticated(store, field(token, 'access_token'));
  });
});
