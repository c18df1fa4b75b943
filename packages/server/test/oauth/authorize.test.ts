import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { addVersion, registerApp } from '../../src/platform/apps';
import { startStoreMigration } from '../../src/platform/stores';
import { approveInBrowser, exchangeCode, expectError, signIn } from '../support/auth-steps';
import { authorizeQuery, authorizeUrl, CookieJar, consentScopeLines } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, basicHeader, createTestApp, createTestStore, LAUNCH_URL, REDIRECT_URI, type StoreFixture, suiteHarness } from '../support/harness';
import { stockSyncApp } from '../support/oauth-apps';
import { specDescriptionOf, specScopeDependencies } from '../support/spec-scopes';

const REQUIRED_PARAMETERS = ['response_type', 'client_id', 'store_id', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method', 'scope'];
const LOGIN_REDIRECT = /^\/dashboard\/login\?return_to=%2Foauth%2Fauthorize%3F/;

/** A scope parameter of exactly 2048 characters naming only scopes the test app declares (duplicates count once). */
function scopeOf2048Characters(): string {
  const scope = [...Array<string>(3).fill('products:read'), ...Array<string>(166).fill('orders:read'), 'products:write'].join(' ');
  if (scope.length !== 2048) throw new Error(`scope is ${scope.length} characters`);
  return scope;
}

describe.each(testDatabases())('GET /oauth/authorize on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;
  let otherStore: StoreFixture;
  let client: AppFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
    otherStore = await createTestStore(h, 'Amber House');
    client = await stockSyncApp(h);
  });

  const query = (overrides: Record<string, string> = {}, of: AppFixture = client) => authorizeQuery(store, of, ['products:read'], overrides);
  const authorize = (url: string, jar?: CookieJar) => {
    const call = request(h.app).get(url);
    return jar ? call.set('Cookie', jar.header()) : call;
  };

  /** Refused as JSON by the endpoint itself: never a redirect, never cached. */
  async function expectRefused(url: string, status: number, code: string): Promise<void> {
    const response = await authorize(url);
    expectError(response, status, code);
    expect(response.headers.location).toBeUndefined();
    expect(response.headers['cache-control']).toBe('no-store');
  }

  /** Passed every check: a signed-out browser is sent to the dashboard login. */
  async function expectAccepted(url: string): Promise<void> {
    const response = await authorize(url);
    expect({ status: response.status, body: response.status === 302 ? undefined : response.body }).toEqual({ status: 302, body: undefined });
    expect(response.headers.location).toMatch(LOGIN_REDIRECT);
  }

  describe('the parameter set is closed', () => {
    it.each(REQUIRED_PARAMETERS)('a request without %s is 400 INVALID_REQUEST', async (name) => {
      const incomplete = query();
      delete incomplete[name];
      await expectRefused(authorizeUrl(incomplete), 400, 'INVALID_REQUEST');
    });

    it('an unknown parameter is 400 INVALID_REQUEST', async () => {
      await expectRefused(authorizeUrl(query({ prompt: 'consent' })), 400, 'INVALID_REQUEST');
    });

    it.each(['state', 'scope', 'client_id', 'response_type'])('%s repeated, even with the same value, is 400 INVALID_REQUEST', async (name) => {
      const complete = query();
      await expectRefused(`${authorizeUrl(complete)}&${new URLSearchParams({ [name]: complete[name] as string }).toString()}`, 400, 'INVALID_REQUEST');
    });
  });

  describe('response_type and code_challenge_method', () => {
    it('response_type=token is 400 UNSUPPORTED_RESPONSE_TYPE', async () => {
      await expectRefused(authorizeUrl(query({ response_type: 'token' })), 400, 'UNSUPPORTED_RESPONSE_TYPE');
    });

    it('code_challenge_method=plain is 400 INVALID_REQUEST', async () => {
      await expectRefused(authorizeUrl(query({ code_challenge_method: 'plain' })), 400, 'INVALID_REQUEST');
    });
  });

  describe('formats and lengths', () => {
    it.each([
      ['client_id not a UUID', { client_id: 'stock-sync' }],
      ['store_id not a UUID', { store_id: '12345' }],
      ['version_id not a UUID', { version_id: 'v1' }],
      ['code_challenge of 42 characters', { code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c' }],
      ['code_challenge of 44 characters', { code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cMM' }],
      ['code_challenge of 43 characters that are not base64url', { code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM' }],
      ['redirect_uri not a URI', { redirect_uri: 'not a uri' }],
      ['redirect_uri over 2048 characters', { redirect_uri: `https://app.example.com/${'a'.repeat(2030)}` }],
      ['state of 15 characters', { state: 'a'.repeat(15) }],
      ['state of 513 characters', { state: 'a'.repeat(513) }],
      ['scope empty', { scope: '' }],
      ['scope of 2049 characters', { scope: `${scopeOf2048Characters()}d` }],
    ])('%s is 400 INVALID_REQUEST', async (_case, overrides) => {
      await expectRefused(authorizeUrl(query(overrides)), 400, 'INVALID_REQUEST');
    });

    it.each([16, 512])('a state of %i characters is accepted', async (length) => {
      await expectAccepted(authorizeUrl(query({ state: 's'.repeat(length) })));
    });

    it('a scope of exactly 2048 characters passes the length check', async () => {
      const response = await authorize(authorizeUrl(query({ scope: scopeOf2048Characters() })));
      expect(response.body?.error?.code).not.toBe('INVALID_REQUEST');
      expect(response.status).toBe(302);
      expect(response.headers.location).toMatch(LOGIN_REDIRECT);
    });
  });

  describe('store, client and version', () => {
    it('an unknown store is 404 STORE_NOT_FOUND', async () => {
      await expectRefused(authorizeUrl(query({ store_id: randomUUID() })), 404, 'STORE_NOT_FOUND');
    });

    it('an unknown client_id is 400 INVALID_CLIENT', async () => {
      await expectRefused(authorizeUrl(query({ client_id: randomUUID() })), 400, 'INVALID_CLIENT');
    });

    it('a version_id of another app, or of no app, is 400 INVALID_CLIENT; its own version is accepted', async () => {
      const another = await createTestApp(h, { name: 'Other App' });
      await expectRefused(authorizeUrl(query({ version_id: another.version.id })), 400, 'INVALID_CLIENT');
      await expectRefused(authorizeUrl(query({ version_id: randomUUID() })), 400, 'INVALID_CLIENT');
      await expectAccepted(authorizeUrl(query({ version_id: client.version.id })));
    });

    it('a private app of another store is 400 INVALID_CLIENT; in its own store it is accepted', async () => {
      const privateApp = await createTestApp(h, { storeId: otherStore.store.id, name: 'Private Tool' });
      await expectRefused(authorizeUrl(query({}, privateApp)), 400, 'INVALID_CLIENT');
      await expectAccepted(authorizeUrl(authorizeQuery(otherStore, privateApp, ['products:read'])));
    });

    it('a store that is migrating is 503 STORE_MIGRATING with Retry-After', async () => {
      const moving = await createTestStore(h, 'Moving Store');
      await startStoreMigration(h.services, moving.store.id);
      const response = await authorize(authorizeUrl(authorizeQuery(moving, client, ['products:read'])));
      expectError(response, 503, 'STORE_MIGRATING');
      expect(response.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      expect(response.headers.location).toBeUndefined();
    });
  });

  describe('redirect_uri must match a registered redirect URL exactly', () => {
    it.each([
      ['a trailing slash', `${REDIRECT_URI}/`],
      ['a different path', 'https://app.example.com/oauth/callback2'],
      ['an extra query', `${REDIRECT_URI}?next=1`],
      ['another host', 'https://evil.example/oauth/callback'],
    ])('%s is 400 REDIRECT_URI_MISMATCH', async (_case, redirectUri) => {
      await expectRefused(authorizeUrl(query({ redirect_uri: redirectUri })), 400, 'REDIRECT_URI_MISMATCH');
    });

    it('the second registered redirect URL is accepted', async () => {
      await expectAccepted(authorizeUrl(query({ redirect_uri: 'http://localhost:8787/callback' })));
    });
  });

  describe('scopes', () => {
    it.each([
      ['missing a required scope', 'orders:read'],
      ['a scope beyond required + optional', 'products:read reviews:read'],
      ['an unknown scope name', 'products:read products:delete'],
      ['a name of an object property', 'products:read constructor'],
      ['__proto__', 'products:read __proto__'],
    ])('%s is 400 INVALID_SCOPE', async (_case, scope) => {
      await expectRefused(authorizeUrl(query({ scope })), 400, 'INVALID_SCOPE');
    });

    it('orders.digital:read without orders:read is 400 SCOPE_DEPENDENCIES_MUST_BE_VISIBLE (the interface example)', async () => {
      const digital = await createTestApp(h, { required: ['products:read'], optional: ['orders:read', 'orders.digital:read'], name: 'Digital Keys' });
      await expectRefused(authorizeUrl(query({ scope: 'products:read orders.digital:read' }, digital)), 400, 'SCOPE_DEPENDENCIES_MUST_BE_VISIBLE');
      await expectAccepted(authorizeUrl(query({ scope: 'products:read orders:read orders.digital:read' }, digital)));
    });

    /** A scope with every scope it needs, directly or through the scopes it needs. */
    const withEverythingNeeded = (scope: string): string[] => [scope, ...(specScopeDependencies.get(scope) ?? []).flatMap(withEverythingNeeded)];

    it.each([...specScopeDependencies])('%s without %j, which the spec says it needs, is 400 SCOPE_DEPENDENCIES_MUST_BE_VISIBLE', async (scope, needs) => {
      const scopes = [...new Set(withEverythingNeeded(scope))];
      const dependent = await createTestApp(h, { required: [], optional: scopes, name: `Needs ${scope}` });
      const requesting = (requested: string[]) => authorizeUrl(query({ scope: requested.join(' ') }, dependent));
      await expectRefused(requesting(scopes.filter((other) => !needs.includes(other))), 400, 'SCOPE_DEPENDENCIES_MUST_BE_VISIBLE');
      await expectAccepted(requesting(scopes));
    });
  });

  describe('the order of the checks', () => {
    it('the closed parameter set comes before response_type', async () => {
      await expectRefused(authorizeUrl(query({ response_type: 'token', prompt: 'none' })), 400, 'INVALID_REQUEST');
    });

    it('response_type comes before the formats', async () => {
      await expectRefused(authorizeUrl(query({ response_type: 'token', code_challenge_method: 'plain', client_id: 'x' })), 400, 'UNSUPPORTED_RESPONSE_TYPE');
    });

    it('the formats come before the store', async () => {
      await expectRefused(authorizeUrl(query({ store_id: randomUUID(), state: 'short' })), 400, 'INVALID_REQUEST');
    });

    it('an unknown store comes before an unknown client and a bad redirect_uri', async () => {
      await expectRefused(
        authorizeUrl(query({ store_id: randomUUID(), client_id: randomUUID(), redirect_uri: 'https://evil.example/cb' })),
        404,
        'STORE_NOT_FOUND',
      );
    });

    it('an unknown client comes before a bad redirect_uri', async () => {
      await expectRefused(authorizeUrl(query({ client_id: randomUUID(), redirect_uri: 'https://evil.example/cb' })), 400, 'INVALID_CLIENT');
    });

    it('a bad redirect_uri comes before a bad scope', async () => {
      await expectRefused(authorizeUrl(query({ redirect_uri: 'https://evil.example/cb', scope: 'reviews:read' })), 400, 'REDIRECT_URI_MISMATCH');
    });

    it('a bad scope comes before a missing dependency', async () => {
      const digital = await createTestApp(h, { required: ['products:read'], optional: ['orders:read', 'orders.digital:read'], name: 'Digital Keys' });
      await expectRefused(authorizeUrl(query({ scope: 'products:read orders.digital:read reviews:read' }, digital)), 400, 'INVALID_SCOPE');
    });
  });

  describe('the browser', () => {
    it('a signed-out browser is sent to the dashboard login, which returns to this request', async () => {
      const url = authorizeUrl(query());
      const response = await authorize(url);
      expect(response.status).toBe(302);
      const location = new URL(response.headers.location as string, 'https://svc.example');
      expect(location.pathname).toBe('/dashboard/login');
      expect(location.searchParams.get('return_to')).toBe(url);
    });

    it('a browser signed in as the owner of another store is sent to the login', async () => {
      const jar = new CookieJar();
      await signIn(h.app, jar, otherStore);
      const response = await authorize(authorizeUrl(query()), jar);
      expect(response.status).toBe(302);
      expect(response.headers.location).toMatch(LOGIN_REDIRECT);
      const login = await request(h.app)
        .get(response.headers.location as string)
        .set('Cookie', jar.header());
      expect(login.text).toContain('does not own this store');
    });

    it('the consent page shows every requested scope in the words of the spec and marks the optional ones as tickable', async () => {
      const jar = new CookieJar();
      await signIn(h.app, jar, store);
      const consent = await authorize(authorizeUrl(authorizeQuery(store, client, ['products:read', 'products:write', 'orders:read'])), jar);
      expect(consent.status).toBe(200);
      expect(consentScopeLines(consent.text)).toEqual(
        ['products:read', 'products:write', 'orders:read'].map((scope) => ({ words: specDescriptionOf(scope), scope })),
      );
      const tickable = [...consent.text.matchAll(/<input type="checkbox" name="optional_scope" value="([^"]+)"/g)].map((match) => match[1]);
      expect(tickable.sort()).toEqual(['orders:read', 'products:write']);
    });

    it('unticking optional scopes narrows the granted scope in the token response', async () => {
      const { callback } = await approveInBrowser(h.app, store, client, ['products:read', 'products:write', 'orders:read'], { optional: [] });
      const tokens = await exchangeCode(h.app, client, callback.searchParams.get('code') as string);
      expect(tokens.status).toBe(200);
      expect(tokens.body.scope).toBe('products:read');
    });

    it('a scope the request did not name cannot be ticked into the grant', async () => {
      const { callback } = await approveInBrowser(h.app, store, client, ['products:read', 'products:write'], { optional: ['products:write', 'orders:read'] });
      const tokens = await exchangeCode(h.app, client, callback.searchParams.get('code') as string);
      expect(tokens.body.scope).toBe('products:read products:write');
    });

    it('the redirect carries the code, the state unchanged and the issuer (RFC 9207)', async () => {
      const state = 'Sp ce+plus/slash?q=1&x=%41~é"<';
      const { callback } = await approveInBrowser(h.app, store, client, ['products:read'], { overrides: { state } });
      expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
      expect(callback.searchParams.get('state')).toBe(state);
      expect(callback.searchParams.get('code')).toMatch(/^svc_c_/);
      expect(callback.searchParams.get('iss')).toBe(h.services.issuer);
      expect([...callback.searchParams.keys()].sort()).toEqual(['code', 'iss', 'state']);
    });

    it('the redirect keeps the query of a registered redirect URL', async () => {
      const registered = 'https://app.example.com/cb?tenant=7';
      const { app, clientSecret } = await registerApp(h.services, { name: 'Tenant App' });
      const version = await addVersion(h.services, app.id, {
        redirectUrls: [registered],
        launchUrl: LAUNCH_URL,
        requiredScopes: ['products:read'],
        optionalScopes: [],
      });
      const tenantApp: AppFixture = { app, version, clientSecret, basic: basicHeader(app.id, clientSecret) };
      await expectRefused(authorizeUrl(query({ redirect_uri: 'https://app.example.com/cb' }, tenantApp)), 400, 'REDIRECT_URI_MISMATCH');
      await expectRefused(authorizeUrl(query({ redirect_uri: 'https://app.example.com/cb?tenant=8' }, tenantApp)), 400, 'REDIRECT_URI_MISMATCH');

      const {
        query: sent,
        answered,
        callback,
      } = await approveInBrowser(h.app, store, tenantApp, ['products:read'], { overrides: { redirect_uri: registered } });
      expect(answered.headers.location).toMatch(/^https:\/\/app\.example\.com\/cb\?tenant=7&/);
      expect(Object.fromEntries(callback.searchParams)).toEqual({
        tenant: '7',
        code: expect.stringMatching(/^svc_c_/),
        state: sent.state,
        iss: h.services.issuer,
      });
      const tokens = await exchangeCode(h.app, tenantApp, callback.searchParams.get('code') as string, registered);
      expect(tokens.status).toBe(200);
    });
  });
});
