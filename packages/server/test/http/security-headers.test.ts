import fs from 'node:fs';
import { operationTable, resolveLocalRef } from '@svc/contract';
import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app';
import { bundledSpecPath } from '../../src/core/paths';
import { PREFLIGHT_MAX_AGE_SECONDS, STORE_API_REQUEST_HEADERS, storeApiMethods, storeApiResponseHeaders } from '../../src/http/cors';
import { createLogger } from '../../src/http/request-log';
import { inlineHashesOf } from '../../src/http/security-headers';
import { CookieJar } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, createTestStore, installWithTokens, type StoreFixture, suiteHarness } from '../support/harness';
import { postToken, refreshBody } from '../support/token-client';

const LISTED = 'https://app.example.com';
const UNLISTED = 'https://evil.example.net';
const JSON_POLICY = "default-src 'none';frame-ancestors 'none'";
const DEBUG = 20;

/** A logger at debug whose lines are kept, to see the refused preflights. */
function debugLog() {
  const lines: { level: number; msg: string; origin?: string; path?: string }[] = [];
  const logger = createLogger({ level: 'debug', environment: 'test' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** The headers every answer carries, whatever it is. */
function expectBaseline(response: request.Response): void {
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(response.headers['referrer-policy']).toBe('no-referrer');
  expect(response.headers['x-frame-options']).toBe('DENY');
  expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(response.headers['x-powered-by']).toBeUndefined();
}

const noAllowHeaders = (response: request.Response) => Object.keys(response.headers).filter((name) => name.startsWith('access-control-'));

const preflight = (app: Express, path: string, origin: string, method = 'GET', headers = 'authorization') =>
  request(app).options(path).set('Origin', origin).set('Access-Control-Request-Method', method).set('Access-Control-Request-Headers', headers);

describe('the CORS constants follow the spec', () => {
  it('allow every request header the store API declares', () => {
    const document = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as { paths: Record<string, Record<string, unknown>> };
    const declared = new Set<string>();
    for (const [template, pathItem] of Object.entries(document.paths)) {
      if (!template.startsWith('/stores/')) continue;
      for (const operation of Object.values(pathItem) as { parameters?: unknown[] }[]) {
        for (const parameter of operation?.parameters ?? []) {
          const { in: location, name } = resolveLocalRef<{ in: string; name: string }>(document, parameter);
          if (location === 'header') declared.add(name.toLowerCase());
        }
      }
    }
    expect(declared.size).toBeGreaterThan(0);
    const allowed = STORE_API_REQUEST_HEADERS.map((name) => name.toLowerCase());
    for (const name of declared) expect(allowed).toContain(name);
  });

  it('allow what the SDK sends from a browser: its X-Client-User-Agent and trace context', () => {
    const allowed = STORE_API_REQUEST_HEADERS.map((name) => name.toLowerCase());
    for (const name of ['api-version', 'x-client-user-agent', 'idempotency-key', 'if-match', 'traceparent', 'tracestate']) expect(allowed).toContain(name);
  });

  it("allow the store API's methods, and expose its declared headers but not the safelisted ones", () => {
    const used = new Set(
      Object.values(operationTable)
        .filter((entry) => entry.path.startsWith('/stores/'))
        .map((entry) => entry.method.toUpperCase()),
    );
    expect(new Set(storeApiMethods())).toEqual(used);
    expect(storeApiResponseHeaders()).toEqual(
      expect.arrayContaining(['ETag', 'X-Request-Id', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed']),
    );
    expect(storeApiResponseHeaders().map((name) => name.toLowerCase())).not.toContain('cache-control');
  });

  it('hash inline scripts and styles as the browser parses them, not scripts loaded from a file', () => {
    const { scripts, styles } = inlineHashesOf(
      '<style>\r\nb{}\r\n</style><script>a()</script><script src="x.js"></script><SCRIPT type="module">\nb()</SCRIPT>',
    );
    // sha256 of "a()" and "\nb()", and of "\nb{}\n" with CR LF read as LF
    expect(scripts).toEqual(["'sha256-qVpDBgj7bpq5hMAcGp3AOc79J3Y1Z4HvySTwKrWDoy4='", "'sha256-w3yLWLUkl5XPuPEx8bjPobiVq2wTDUiBrthwgSQlwXE='"]);
    expect(styles).toEqual(["'sha256-lkYe5SAjgQT1av6fhWoNE7zxmqmfMlAULMnahGbZ8os='"]);
  });
});

describe.each(testDatabases())('security headers and CORS on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  const log = debugLog();
  let store: StoreFixture;
  let client: AppFixture;
  let accessToken: string;
  let refreshToken: string;
  /** Production behind a trusted proxy on this machine, with one listed origin. */
  let production: Express;
  /** The same outside production. */
  let development: Express;

  beforeAll(async () => {
    store = await createTestStore(h);
    client = await createTestApp(h, { required: ['products:read'], optional: [] });
    ({ access_token: accessToken, refresh_token: refreshToken } = await installWithTokens(h, store, client, ['products:read']));
    const config = { validateResponses: true, exposeInternalErrors: false, trustProxy: ['loopback'], corsOrigins: [LISTED] } as const;
    production = createApp({ config: { ...config, environment: 'production' }, services: h.services, logger: log.logger });
    development = createApp({ config: { ...config, environment: 'development' }, services: h.services, logger: log.logger });
  });

  const me = (app: Express) => request(app).get(`/stores/${store.store.id}/v1/me`);

  describe('on every answer', () => {
    it('a store API answer: nosniff, the JSON policy, no referrer, same-origin resources only', async () => {
      const response = await me(h.app).set('Authorization', `Bearer ${accessToken}`);
      expect(response.status).toBe(200);
      expectBaseline(response);
      expect(response.headers['content-security-policy']).toBe(JSON_POLICY);
      expect(response.headers['cross-origin-resource-policy']).toBe('same-origin');
    });

    it('an OAuth answer', async () => {
      const response = await postToken(h.app, client.basic, refreshBody(refreshToken));
      expect(response.status).toBe(200);
      ({ access_token: accessToken, refresh_token: refreshToken } = response.body as { access_token: string; refresh_token: string });
      expectBaseline(response);
      expect(response.headers['content-security-policy']).toBe(JSON_POLICY);
      expect(response.headers['cache-control']).toBe('no-store');
    });

    it('error answers: 404, 401 from the store API and from OAuth', async () => {
      const notFound = await request(h.app).get('/no-such-path');
      expect(notFound.status).toBe(404);
      const unauthenticated = await me(h.app);
      expect(unauthenticated.status).toBe(401);
      const badClient = await request(h.app)
        .post('/oauth/token')
        .set('Authorization', 'Basic bm8tc3VjaDpjbGllbnQ=')
        .type('form')
        .send(refreshBody(refreshToken));
      expect(badClient.status).toBe(401);
      for (const response of [notFound, unauthenticated, badClient]) {
        expectBaseline(response);
        expect(response.headers['content-security-policy']).toBe(JSON_POLICY);
      }
    });

    it('/openapi.json: the JSON policy, readable and embeddable from any origin', async () => {
      const response = await request(h.app).get('/openapi.json');
      expectBaseline(response);
      expect(response.headers['content-security-policy']).toBe(JSON_POLICY);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(response.headers['cross-origin-resource-policy']).toBe('cross-origin');
    });

    it('/docs/: its own inline scripts and styles by hash, nothing inline by default, no eval, nothing from the network', async () => {
      const response = await request(h.app).get('/docs/');
      expect(response.status).toBe(200);
      expectBaseline(response);
      const { scripts, styles } = inlineHashesOf(response.text);
      expect(scripts.length).toBeGreaterThan(0);
      const directives = Object.fromEntries(
        (response.headers['content-security-policy'] as string).split(';').map((directive) => {
          const [name = '', ...sources] = directive.trim().split(/\s+/);
          return [name, sources];
        }),
      );
      expect(directives['default-src']).toEqual(["'none'"]);
      expect(directives['script-src']).toEqual(scripts);
      expect(directives['style-src-elem']).toEqual(expect.arrayContaining(styles));
      expect(directives['style-src']).toEqual(directives['style-src-elem']);
      for (const sources of Object.values(directives)) {
        expect(sources).not.toContain("'unsafe-eval'");
        expect(sources.filter((source: string) => /^(https?:|\*|'self')/.test(source))).toEqual([]);
      }
      expect(directives['script-src']).not.toContain("'unsafe-inline'");
      expect(directives['style-src-elem']).not.toContain("'unsafe-inline'");
      expect(directives['form-action']).toEqual(["'none'"]);
      expect(directives['base-uri']).toEqual(["'none'"]);
      expect(response.headers['cross-origin-opener-policy']).toBe('same-origin');
    });

    it('the dashboard keeps its own page policy and no-store', async () => {
      const response = await request(h.app).get('/dashboard/login');
      expect(response.status).toBe(200);
      expectBaseline(response);
      expect(response.headers['content-security-policy']).toBe(
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      );
      expect(response.headers['cache-control']).toBe('no-store');
      // A sign-in page in an app's popup keeps its opener.
      expect(response.headers['cross-origin-opener-policy']).toBeUndefined();
    });

    it('the consent redirect of /oauth/authorize keeps the page policy too', async () => {
      const jar = new CookieJar();
      const response = await request(h.app)
        .get('/oauth/authorize')
        .query({
          response_type: 'code',
          client_id: client.app.id,
          store_id: store.store.id,
          redirect_uri: client.version.redirectUrls[0],
          state: 'xyzSTATE-0123456789abcdef',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
          scope: 'products:read',
        })
        .set('Cookie', jar.header());
      expect(response.status).toBe(302);
      expectBaseline(response);
      expect(response.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'unsafe-inline'/);
    });
  });

  describe('HSTS', () => {
    it('is sent in production on an answer that came over HTTPS (a trusted proxy said so)', async () => {
      for (const response of [
        await me(production).set('X-Forwarded-Proto', 'https'),
        await request(production).get('/docs/').set('X-Forwarded-Proto', 'https'),
      ]) {
        expect(response.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
      }
    });

    it('is not sent over HTTP, nor when an untrusted peer claims HTTPS, nor outside production', async () => {
      expect((await me(production)).headers['strict-transport-security']).toBeUndefined();
      expect((await me(production).set('X-Forwarded-Proto', 'http')).headers['strict-transport-security']).toBeUndefined();
      const untrusted = createApp({ config: { validateResponses: true, exposeInternalErrors: false, environment: 'production' }, services: h.services });
      expect((await me(untrusted).set('X-Forwarded-Proto', 'https')).headers['strict-transport-security']).toBeUndefined();
      expect((await me(development).set('X-Forwarded-Proto', 'https')).headers['strict-transport-security']).toBeUndefined();
      expect((await me(h.app).set('X-Forwarded-Proto', 'https')).headers['strict-transport-security']).toBeUndefined();
    });
  });

  describe('CORS', () => {
    const storePath = () => `/stores/${store.store.id}/v1/products`;

    it('a preflight from a listed origin to the store API: 204 with the allow headers, no credentials', async () => {
      const response = await preflight(production, storePath(), LISTED, 'POST', 'authorization,content-type,idempotency-key,x-client-user-agent,traceparent');
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expect(response.headers['access-control-allow-origin']).toBe(LISTED);
      expect(response.headers.vary).toMatch(/\bOrigin\b/);
      expect(response.headers['access-control-allow-methods']?.split(',')).toEqual(expect.arrayContaining(['GET', 'POST', 'PATCH', 'DELETE']));
      expect(response.headers['access-control-allow-headers']?.split(',')).toEqual([...STORE_API_REQUEST_HEADERS]);
      expect(response.headers['access-control-max-age']).toBe(String(PREFLIGHT_MAX_AGE_SECONDS));
      expect(response.headers['access-control-allow-credentials']).toBeUndefined();
      expectBaseline(response);
    });

    it('a preflight from an unlisted origin: a deliberate 204 that allows nothing, noted at debug', async () => {
      for (const app of [production, h.app]) {
        const response = await preflight(app, storePath(), UNLISTED, 'PATCH');
        expect(response.status).toBe(204);
        expect(noAllowHeaders(response)).toEqual([]);
        expect(response.headers.vary).toMatch(/\bOrigin\b/);
        expect(response.headers['x-request-id']).toBeDefined();
      }
      expect(log.lines).toContainEqual(expect.objectContaining({ level: DEBUG, msg: 'refused a CORS preflight', origin: UNLISTED, path: storePath() }));
    });

    it('a preflight to an OAuth endpoint or anything outside the store API, even from a listed origin: never an allow header', async () => {
      for (const path of ['/oauth/token', '/oauth/launch/verify', '/oauth/operations/lookup', '/oauth/authorize', '/dashboard/login', '/no-such-path']) {
        const response = await preflight(production, path, LISTED, 'POST', 'authorization,content-type');
        expect(response.status).toBe(204);
        expect(noAllowHeaders(response)).toEqual([]);
      }
    });

    it('a preflight to /openapi.json: any origin, without credentials', async () => {
      const response = await preflight(h.app, '/openapi.json', UNLISTED, 'GET', 'if-none-match');
      expect(response.status).toBe(204);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(response.headers['access-control-allow-headers']).toBe('If-None-Match');
    });

    it('an OPTIONS that is not a preflight is still refused as an undeclared method', async () => {
      expect((await request(production).options(storePath())).status).toBe(405);
      expect((await request(production).options(storePath()).set('Origin', LISTED)).status).toBe(405);
    });

    it('a real cross-origin call from a listed origin reads the answer and its headers', async () => {
      const response = await me(production).set('Origin', LISTED).set('Authorization', `Bearer ${accessToken}`);
      expect(response.status).toBe(200);
      expect(response.headers['access-control-allow-origin']).toBe(LISTED);
      expect(response.headers.vary).toMatch(/\bOrigin\b/);
      const exposed = (response.headers['access-control-expose-headers'] as string).split(',');
      expect(exposed).toEqual(
        expect.arrayContaining(['ETag', 'X-Request-Id', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed', 'WWW-Authenticate']),
      );
      expect(response.headers['access-control-allow-credentials']).toBeUndefined();
    });

    it('a call from an unlisted origin, or with no origins listed, gets no allow header', async () => {
      const unlisted = await me(production).set('Origin', UNLISTED).set('Authorization', `Bearer ${accessToken}`);
      expect(unlisted.status).toBe(200);
      expect(unlisted.headers['access-control-allow-origin']).toBeUndefined();
      expect(unlisted.headers.vary).toMatch(/\bOrigin\b/);
      const none = await me(h.app).set('Origin', LISTED).set('Authorization', `Bearer ${accessToken}`);
      expect(noAllowHeaders(none)).toEqual([]);
    });

    it('an OAuth call from a listed origin gets no allow header', async () => {
      const response = await postToken(production, client.basic, refreshBody(refreshToken)).set('Origin', LISTED);
      expect(response.status).toBe(200);
      ({ access_token: accessToken, refresh_token: refreshToken } = response.body as { access_token: string; refresh_token: string });
      expect(noAllowHeaders(response)).toEqual([]);
    });
  });
});
