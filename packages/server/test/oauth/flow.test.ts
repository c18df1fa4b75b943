import request from 'supertest';
import { answerConsentForm, authorizeQuery, authorizeUrl, CookieJar, consentScopeLines, signInAndOpenConsent } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestStore, REDIRECT_URI, RFC7636_VERIFIER, type StoreFixture, suiteHarness } from '../support/harness';
import { stockSyncApp } from '../support/oauth-apps';
import { specDescriptionOf } from '../support/spec-scopes';
import { tokenResponse } from '../support/token-client';

describe.each(testDatabases())('the authorization-code flow with PKCE, browser steps included, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;
  let client: AppFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
    client = await stockSyncApp(h);
  });

  it('signs in, consents, exchanges the code (RFC 7636 Appendix B verifier), calls /me and refreshes', async () => {
    const jar = new CookieJar();
    const query = authorizeQuery(store, client, ['products:read', 'products:write', 'orders:read']);

    const signedOut = await request(h.app).get(authorizeUrl(query));
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.location).toMatch(/^\/dashboard\/login\?return_to=%2Foauth%2Fauthorize%3F/);

    const consent = await signInAndOpenConsent(h.app, jar, store, authorizeUrl(query));
    expect(consent.status).toBe(200);
    expect(consent.headers['content-type']).toMatch(/^text\/html/);
    expect(consent.headers['x-frame-options']).toBe('DENY');
    expect(consent.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(consent.text).toContain('Stock Sync');
    expect(consent.text).toContain('Royal Oud');
    expect(consentScopeLines(consent.text).map((line) => line.words)).toEqual(['products:read', 'products:write', 'orders:read'].map(specDescriptionOf));

    // The owner unticks orders:read: the grant is narrower than the request.
    const answered = await answerConsentForm(h.app, jar, consent.text, 'approve', ['products:write']);
    expect(answered.status).toBe(302);
    const callback = new URL(answered.headers.location as string);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect(callback.searchParams.get('state')).toBe(query.state);
    const code = callback.searchParams.get('code') as string;
    expect(code).toMatch(/^svc_c_/);

    const exchanged = await request(h.app)
      .post('/oauth/token')
      .set('Authorization', client.basic)
      .type('form')
      .send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: RFC7636_VERIFIER });
    expect(exchanged.status).toBe(200);
    expect(exchanged.headers['cache-control']).toBe('no-store');
    expect(exchanged.body).toEqual(tokenResponse({ scope: 'products:read products:write', storeId: store.store.id }));

    const me = await request(h.app).get(`/stores/${store.store.id}/v1/me`).set('Authorization', `Bearer ${exchanged.body.access_token}`);
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({
      store: { id: store.store.id, name: 'Royal Oud', currency: 'SAR', timezone: 'Asia/Riyadh' },
      app: { id: client.app.id, name: 'Stock Sync', version_id: client.version.id },
      installation: { id: exchanged.body.installation_id, generation: 1, grant_revision: 1 },
      scopes: ['products:read', 'products:write'],
      limits: { pageDefault: 25, pageMax: 100, accessSeconds: 900, bodyBytes: 65536, quotaProofMs: 5000, policyLeaseMs: 45000 },
    });
    expect(me.body.execution).toEqual({
      appId: client.app.id,
      versionId: client.version.id,
      installationId: exchanged.body.installation_id,
      storeId: store.store.id,
      requestId: me.body.meta.request_id,
      generation: 1,
      routeEpoch: 1,
      appAuthEpoch: 1,
      grantRevision: 1,
    });

    const refreshed = await request(h.app)
      .post('/oauth/token')
      .set('Authorization', client.basic)
      .send({ grant_type: 'refresh_token', refresh_token: exchanged.body.refresh_token });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.access_token).not.toBe(exchanged.body.access_token);
    expect(refreshed.body.operation_id).not.toBe(exchanged.body.operation_id);

    const oldAccess = await request(h.app).get(`/stores/${store.store.id}/v1/me`).set('Authorization', `Bearer ${exchanged.body.access_token}`);
    expect(oldAccess.status).toBe(401);
    expect(oldAccess.body.error.code).toBe('UNAUTHENTICATED');
    const newAccess = await request(h.app).get(`/stores/${store.store.id}/v1/me`).set('Authorization', `Bearer ${refreshed.body.access_token}`);
    expect(newAccess.status).toBe(200);
  });

  it('a denial redirects with error=access_denied, the state and the issuer, and installs nothing', async () => {
    const other = await createTestStore(h, 'Amber House');
    const jar = new CookieJar();
    const query = authorizeQuery(other, client, ['products:read']);
    const consent = await signInAndOpenConsent(h.app, jar, other, authorizeUrl(query));
    const answered = await answerConsentForm(h.app, jar, consent.text, 'deny');
    expect(answered.status).toBe(302);
    const callback = new URL(answered.headers.location as string);
    expect(Object.fromEntries(callback.searchParams)).toEqual({ error: 'access_denied', state: query.state, iss: h.services.issuer });
    expect(await h.db('installations').where({ store_id: other.store.id })).toHaveLength(0);
  });
});
