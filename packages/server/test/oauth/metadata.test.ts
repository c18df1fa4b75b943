import { CURRENT_API_VERSION } from '@svc/contract';
import request from 'supertest';
import { createApp } from '../../src/app';
import { ALL_SCOPES } from '../../src/platform/scopes';
import { expectError } from '../support/auth-steps';
import { testDatabases } from '../support/databases';
import { createTestApp, createTestStore, installWithTokens, suiteHarness } from '../support/harness';
import { expectOAuthError, postOAuth, refreshBody } from '../support/token-client';

const PATH = '/.well-known/oauth-authorization-server';

describe.each(testDatabases())('GET /.well-known/oauth-authorization-server (RFC 8414) on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  const appWithIssuer = (issuer: string) => createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services: { ...h.services, issuer } });

  it('answers the bare metadata document for the configured issuer, every endpoint under it', async () => {
    const response = await request(appWithIssuer('https://api.example.com')).get(PATH);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body).toEqual({
      issuer: 'https://api.example.com',
      authorization_endpoint: 'https://api.example.com/oauth/authorize',
      token_endpoint: 'https://api.example.com/oauth/token',
      revocation_endpoint: 'https://api.example.com/oauth/revoke',
      introspection_endpoint: 'https://api.example.com/oauth/introspect',
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic'],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic'],
      scopes_supported: [...ALL_SCOPES],
      authorization_response_iss_parameter_supported: true,
      service_documentation: 'https://api.example.com/docs/',
    });
  });

  it('without PUBLIC_URL the issuer is the local server’s (http://localhost:3000)', async () => {
    const response = await request(h.app).get(PATH);
    expect(response.body.issuer).toBe('http://localhost:3000');
    expect(response.body.token_endpoint).toBe('http://localhost:3000/oauth/token');
  });

  it('is cacheable: Cache-Control public with max-age, a strong ETag, any origin may read it, the current API-Version', async () => {
    const response = await request(h.app).get(PATH).set('Origin', 'https://tool.example');
    expect(response.headers['cache-control']).toBe('public, max-age=300');
    expect(response.headers.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(response.headers['api-version']).toBe(CURRENT_API_VERSION);
    expect(response.headers['x-request-id']).toEqual(expect.any(String));
    // The ETag is the document's: another issuer, another document, another tag.
    const other = await request(appWithIssuer('https://api.example.com')).get(PATH);
    expect(other.headers.etag).not.toBe(response.headers.etag);
  });

  it('a request naming the current ETag in If-None-Match is 304 without a body; another tag gets the document', async () => {
    const { headers } = await request(h.app).get(PATH);
    const etag = headers.etag as string;
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const response = await request(h.app).get(PATH).set('If-None-Match', ifNoneMatch);
      expect({ ifNoneMatch, status: response.status }).toEqual({ ifNoneMatch, status: 304 });
      expect(response.text).toBe('');
      expect(response.headers.etag).toBe(etag);
      expect(response.headers['cache-control']).toBe('public, max-age=300');
    }
    const stale = await request(h.app).get(PATH).set('If-None-Match', '"an-older-copy"');
    expect(stale.status).toBe(200);
    expect(stale.body.issuer).toBe('http://localhost:3000');
  });

  it('a browser preflight from any origin is allowed, as for /openapi.json', async () => {
    const response = await request(h.app)
      .options(PATH)
      .set('Origin', 'https://tool.example')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'if-none-match');
    expect(response.status).toBe(204);
    expect(response.headers['access-control-allow-origin']).toBe('*');
  });

  it('takes no query parameters (422 UNKNOWN_FIELD) and ignores API-Version, as the probes do', async () => {
    expectError(await request(h.app).get(`${PATH}?colour=red`), 422, 'UNKNOWN_FIELD');
    const versioned = await request(h.app).get(PATH).set('API-Version', '1999-01-01');
    expect(versioned.status).toBe(200);
    expect(versioned.headers['api-version']).toBe(CURRENT_API_VERSION);
  });

  it('what it says the token endpoint accepts is what it accepts: client_secret_basic yes, client_secret_post no', async () => {
    const store = await createTestStore(h);
    const client = await createTestApp(h);
    const pair = await installWithTokens(h, store, client, ['products:read']);
    const { body } = await request(h.app).get(PATH);
    expect(body.token_endpoint_auth_methods_supported).toEqual(['client_secret_basic']);
    const basic = await postOAuth(h.app, '/oauth/token', client.basic, refreshBody(pair.refresh_token), 'form');
    expect(basic.status).toBe(200);
    const post = await postOAuth(
      h.app,
      '/oauth/token',
      undefined,
      { ...refreshBody(basic.body.refresh_token), client_id: client.app.id, client_secret: client.clientSecret },
      'form',
    );
    expectOAuthError(post, 400, 'INVALID_REQUEST');
  });

  it('what it says authorize accepts is what it accepts: code_challenge_method S256 only, response_type code only', async () => {
    const { body } = await request(h.app).get(PATH);
    expect(body.code_challenge_methods_supported).toEqual(['S256']);
    expect(body.response_types_supported).toEqual(['code']);
    const store = await createTestStore(h);
    const client = await createTestApp(h);
    const query = (overrides: Record<string, string>) =>
      new URLSearchParams({
        response_type: 'code',
        client_id: client.app.id,
        store_id: store.store.id,
        redirect_uri: 'https://app.example.com/oauth/callback',
        state: 'state-0123456789abcdef',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        scope: 'products:read',
        ...overrides,
      }).toString();
    expectError(await request(h.app).get(`/oauth/authorize?${query({ code_challenge_method: 'plain' })}`), 400, 'INVALID_REQUEST');
    expectError(await request(h.app).get(`/oauth/authorize?${query({ response_type: 'token' })}`), 400, 'UNSUPPORTED_RESPONSE_TYPE');
    expect((await request(h.app).get(`/oauth/authorize?${query({})}`)).status).toBe(302);
  });
});
