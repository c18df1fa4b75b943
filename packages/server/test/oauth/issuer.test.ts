import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app';
import { approveInBrowser, expectError } from '../support/auth-steps';
import { answerConsentForm, authorizeQuery, authorizeUrl, CookieJar, signInAndOpenConsent } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, createTestStore, REDIRECT_URI, type StoreFixture, suiteHarness } from '../support/harness';

const ISSUER = 'https://api.example.com';

/**
 * RFC 9207: every authorization response, once the redirect URI is trusted, names the issuer in
 * `iss`, so an app that talks to several authorization servers can tell which one answered.
 */
describe.each(testDatabases())('the authorization response carries iss (RFC 9207) on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let app: Express;
  let store: StoreFixture;
  let client: AppFixture;

  beforeAll(async () => {
    app = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services: { ...h.services, issuer: ISSUER } });
    store = await createTestStore(h);
    client = await createTestApp(h, { required: ['products:read'], optional: ['orders:read'] });
  });

  it('an approval redirects with code, state and iss, the issuer of the metadata document', async () => {
    const { callback, query } = await approveInBrowser(app, store, client, ['products:read']);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect([...callback.searchParams.keys()].sort()).toEqual(['code', 'iss', 'state']);
    expect(callback.searchParams.get('iss')).toBe(ISSUER);
    expect(callback.searchParams.get('state')).toBe(query.state);
    const metadata = await request(app).get('/.well-known/oauth-authorization-server');
    expect(callback.searchParams.get('iss')).toBe(metadata.body.issuer);
    expect(metadata.body.authorization_response_iss_parameter_supported).toBe(true);
  });

  it('a denial redirects with error=access_denied, state and iss', async () => {
    const jar = new CookieJar();
    const query = authorizeQuery(store, client, ['products:read']);
    const consent = await signInAndOpenConsent(app, jar, store, authorizeUrl(query));
    const answered = await answerConsentForm(app, jar, consent.text, 'deny');
    expect(answered.status).toBe(302);
    const callback = new URL(answered.headers.location as string);
    expect(Object.fromEntries(callback.searchParams)).toEqual({ error: 'access_denied', state: query.state, iss: ISSUER });
  });

  it('the default issuer (no PUBLIC_URL) is the local server’s', async () => {
    const { callback } = await approveInBrowser(h.app, store, client, ['products:read']);
    expect(callback.searchParams.get('iss')).toBe('http://localhost:3000');
  });

  it('before the redirect URI is trusted nothing is redirected, so there is no iss to send: the refusal is JSON', async () => {
    const response = await request(app).get(authorizeUrl(authorizeQuery(store, client, ['products:read'], { redirect_uri: 'https://evil.example/callback' })));
    expectError(response, 400, 'REDIRECT_URI_MISMATCH');
    expect(response.headers.location).toBeUndefined();
  });
});
