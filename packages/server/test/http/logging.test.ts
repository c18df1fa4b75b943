import { Writable } from 'node:stream';
import request from 'supertest';
import { createApp } from '../../src/app';
import * as passwords from '../../src/credentials/passwords';
import { handlers as generatedHandlers } from '../../src/generated/registry';
import { createLogger } from '../../src/http/request-log';
import { approveInBrowser, signIn } from '../support/auth-steps';
import { CookieJar, inputValue } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, createTestStore, installWithTokens, type StoreFixture, suiteHarness, UUID } from '../support/harness';
import { postToken, refreshBody } from '../support/token-client';

/** A request's line as the log holds it. */
interface LogLine {
  level: number;
  msg: string;
  request_id?: string;
  method?: string;
  operation_id?: string;
  route?: string;
  status?: number;
  duration_ms?: number;
  store_id?: string;
  installation_id?: string;
  app_id?: string;
  err_code?: string;
  err?: { type: string; message: string; stack: string };
}

const INFO = 30;
const ERROR = 50;

/** A logger (the one main.ts builds, at info, not a terminal) whose output is kept as text. */
class LogCapture {
  text = '';

  readonly logger = createLogger(
    { level: 'info', environment: 'test' },
    {
      write: (line: string) => {
        this.text += line;
      },
    },
  );

  lines(): LogLine[] {
    return this.text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LogLine);
  }

  /**
   * The lines written for one request. The line is written when the response finishes, which may
   * come a turn of the event loop after the client has read it.
   */
  async linesOf(requestId: string): Promise<LogLine[]> {
    for (let turn = 0; turn < 100 && !this.text.includes(requestId); turn += 1) await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    return this.lines().filter((line) => line.request_id === requestId);
  }

  /** The one line of the request that got this response (its `X-Request-Id`). */
  async lineOf(response: request.Response): Promise<LogLine> {
    const requestId = response.headers['x-request-id'] as string;
    expect(requestId).toMatch(UUID);
    const lines = await this.linesOf(requestId);
    expect(lines).toHaveLength(1);
    return lines[0] as LogLine;
  }
}

describe.each(testDatabases())('request logs ($name)', (database) => {
  const log = new LogCapture();
  const h = suiteHarness(database, { logger: log.logger });
  let store: StoreFixture;
  let client: AppFixture;
  let accessToken: string;
  let refreshToken: string;
  let installationId: string;

  beforeAll(async () => {
    store = await createTestStore(h);
    client = await createTestApp(h);
    const tokens = await installWithTokens(h, store, client, ['products:read']);
    accessToken = tokens.access_token;
    refreshToken = tokens.refresh_token;
    const me = await request(h.app).get(`/stores/${store.store.id}/v1/me`).set('Authorization', `Bearer ${accessToken}`);
    installationId = me.body.data.installation.id as string;
  });

  const storeApi = (path: string) => request(h.app).get(`/stores/${store.store.id}/v1/${path}`);

  describe('one line per request, when its response finishes', () => {
    it('a store API call: method, operationId, status, duration, request id, store, installation and app', async () => {
      const response = await storeApi('products?limit=2').set('Authorization', `Bearer ${accessToken}`);
      expect(response.status).toBe(200);
      const line = await log.lineOf(response);
      expect(line).toMatchObject({
        level: INFO,
        method: 'GET',
        operation_id: 'products.list',
        status: 200,
        store_id: store.store.id,
        installation_id: installationId,
        app_id: client.app.id,
      });
      expect(line.duration_ms).toEqual(expect.any(Number));
      expect(line.duration_ms).toBeGreaterThanOrEqual(0);
      expect(line).not.toHaveProperty('err_code');
      expect(line).not.toHaveProperty('err');
      expect(line).not.toHaveProperty('route');
    });

    it('a 404 from the store API: its status and error code in the request line, no separate error line', async () => {
      const response = await storeApi('products/999999999').set('Authorization', `Bearer ${accessToken}`);
      expect(response.status).toBe(404);
      const line = await log.lineOf(response);
      expect(line).toMatchObject({ level: INFO, operation_id: 'products.get', status: 404, err_code: response.body.error.code, store_id: store.store.id });
      expect(line).not.toHaveProperty('err');
    });

    it('a 401: the error code, and no store or installation since no token was resolved', async () => {
      const response = await storeApi('products').set('Authorization', 'Bearer svc_at_not-a-token');
      expect(response.status).toBe(401);
      const line = await log.lineOf(response);
      expect(line).toMatchObject({ level: INFO, method: 'GET', operation_id: 'products.list', status: 401, err_code: 'UNAUTHENTICATED' });
      for (const field of ['store_id', 'installation_id', 'app_id', 'err']) expect(line).not.toHaveProperty(field);
    });

    it('a path no operation matches: its status and code, no operation and no path', async () => {
      const response = await request(h.app).get('/no/such/path?token=svc_at_from-a-query');
      expect(response.status).toBe(404);
      const line = await log.lineOf(response);
      expect(line).toMatchObject({ level: INFO, method: 'GET', status: 404, err_code: 'NOT_FOUND' });
      expect(line).not.toHaveProperty('operation_id');
      expect(line).not.toHaveProperty('route');
      expect(log.text).not.toContain('from-a-query');
    });

    it('an OAuth token request: the client that authenticated', async () => {
      const response = await postToken(h.app, client.basic, refreshBody(refreshToken));
      expect(response.status).toBe(200);
      refreshToken = response.body.refresh_token as string;
      accessToken = response.body.access_token as string;
      const line = await log.lineOf(response);
      expect(line).toMatchObject({ level: INFO, method: 'POST', operation_id: 'oauth.token', status: 200, app_id: client.app.id });
      expect(line).not.toHaveProperty('store_id');
    });

    it('a refused token request: the OAuth error code', async () => {
      const response = await postToken(h.app, client.basic, refreshBody(`svc_rt_${'A'.repeat(49)}`));
      expect(response.status).toBe(400);
      const line = await log.lineOf(response);
      expect(line).toMatchObject({ level: INFO, operation_id: 'oauth.token', status: 400, err_code: response.body.error.code, app_id: client.app.id });
    });

    it('a dashboard page: its route template, not its URL', async () => {
      const response = await request(h.app).get('/dashboard/login?return_to=%2Fdashboard%3Fsecret%3Dfrom-the-query');
      expect(response.status).toBe(200);
      const line = await log.lineOf(response);
      expect(line).toMatchObject({ level: INFO, method: 'GET', route: '/dashboard/login', status: 200 });
      expect(line).not.toHaveProperty('operation_id');
      expect(log.text).not.toContain('from-the-query');
    });

    it('a dashboard action: the template with its parameters unfilled', async () => {
      const jar = new CookieJar();
      await signIn(h.app, jar, store);
      const response = await request(h.app)
        .post(`/dashboard/stores/${store.store.id}/installations/${installationId}/open`)
        .set('Cookie', jar.header())
        .type('form')
        .send({ csrf: 'not-the-token' });
      expect(response.status).toBe(403);
      const line = await log.lineOf(response);
      expect(line).toMatchObject({ method: 'POST', route: '/dashboard/stores/:storeId/installations/:installationId/open', status: 403 });
    });

    it('an unknown dashboard page and the docs: their mount', async () => {
      const missing = await request(h.app).get('/dashboard/no-such-page?x=1');
      expect(missing.status).toBe(404);
      expect(await log.lineOf(missing)).toMatchObject({ route: '/dashboard', status: 404 });
      const docs = await request(h.app).get('/docs/');
      expect(await log.lineOf(docs)).toMatchObject({ route: '/docs', status: docs.status });
    });
  });

  it('no line holds a token, secret, password, cookie, Authorization header, OAuth code or state', async () => {
    const secrets: string[] = [accessToken, refreshToken, client.clientSecret, client.basic, client.basic.slice('Basic '.length), store.password];
    // A bearer token on the store API.
    await storeApi('me').set('Authorization', `Bearer ${accessToken}`).expect(200);
    // A client secret in a form body (refused: credentials go in the Authorization header).
    await postToken(h.app, undefined, { ...refreshBody(refreshToken), client_id: client.app.id, client_secret: client.clientSecret }).expect(400);
    // A password that does not match, and the owner's own, with the login form's CSRF cookie.
    const wrongPassword = 'wrong-password-never-logged';
    secrets.push(wrongPassword);
    const loginPage = await request(h.app).get('/dashboard/login');
    const csrfCookie = (loginPage.headers['set-cookie'] as unknown as string[])[0]?.split(';')[0] as string;
    secrets.push(csrfCookie.split('=')[1] as string);
    await request(h.app)
      .post('/dashboard/login')
      .set('Cookie', csrfCookie)
      .type('form')
      .send({ csrf: inputValue(loginPage.text, 'csrf'), email: store.email, password: wrongPassword })
      .expect(401);
    // The browser flow: a session cookie, the authorize query's state, the code in the redirect.
    const flow = await approveInBrowser(h.app, store, client, ['products:read']);
    const session = flow.jar.header();
    secrets.push(session, ...session.split('; ').map((cookie) => cookie.split('=')[1] as string));
    await request(h.app).get('/dashboard').set('Cookie', session).expect(200);
    const code = flow.callback.searchParams.get('code') as string;
    secrets.push(code, flow.query.state as string);
    // Exchanging the code (Basic header, code in the body) and the tokens it answers with.
    const exchanged = await postToken(h.app, client.basic, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: flow.query.redirect_uri as string,
      code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
    }).expect(200);
    secrets.push(exchanged.body.access_token as string, exchanged.body.refresh_token as string);

    await log.linesOf(exchanged.headers['x-request-id'] as string);
    expect(log.lines().length).toBeGreaterThan(0);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      expect(log.text).not.toContain(secret);
    }
    expect(log.text).not.toMatch(/authorization|cookie|password|svc_at_|svc_rt_|svc_cs_|svc_c_/i);
  });

  describe('unexpected failures', () => {
    afterEach(() => jest.restoreAllMocks());

    const failure = 'the disk caught fire';

    it('are one line at level error with the stack, under the request id the response quotes; the stack is never in the response', async () => {
      const app = createApp({
        config: { validateResponses: true, exposeInternalErrors: false },
        services: h.services,
        handlers: { ...generatedHandlers, me: () => Promise.reject(new Error(failure)) },
        logger: log.logger,
      });
      const response = await request(app).get(`/stores/${store.store.id}/v1/me`).set('Authorization', `Bearer ${accessToken}`);
      expect(response.status).toBe(500);
      expect(response.body.error.code).toBe('INTERNAL');
      expect(response.text).not.toContain(failure);
      expect(response.text).not.toContain('logging.test');
      const lines = await log.linesOf(response.body.meta.request_id as string);
      expect(lines).toHaveLength(1);
      const line = lines[0] as LogLine;
      expect(line).toMatchObject({
        level: ERROR,
        operation_id: 'me',
        status: 500,
        err_code: 'INTERNAL',
        store_id: store.store.id,
        installation_id: installationId,
      });
      expect(line.err).toMatchObject({ type: 'Error', message: failure });
      expect(line.err?.stack).toContain(failure);
      expect(line.err?.stack).toContain('logging.test.ts');
    });

    it('in the dashboard too', async () => {
      jest.spyOn(passwords, 'verifySignIn').mockRejectedValue(new Error(failure));
      const app = createApp({ config: { validateResponses: true, exposeInternalErrors: false }, services: h.services, logger: log.logger });
      const loginPage = await request(app).get('/dashboard/login');
      const csrfCookie = (loginPage.headers['set-cookie'] as unknown as string[])[0]?.split(';')[0] as string;
      const response = await request(app)
        .post('/dashboard/login')
        .set('Cookie', csrfCookie)
        .type('form')
        .send({ csrf: inputValue(loginPage.text, 'csrf'), email: store.email, password: store.password });
      expect(response.status).toBe(500);
      expect(response.text).not.toContain(failure);
      const requestId = response.headers['x-request-id'] as string;
      expect(response.text).toContain(requestId);
      const line = await log.lineOf(response);
      expect(line).toMatchObject({ level: ERROR, method: 'POST', route: '/dashboard/login', status: 500 });
      expect(line.err?.stack).toContain(failure);
      expect(log.text).not.toContain(store.password);
    });
  });
});

describe('the logger main.ts builds', () => {
  /** A stream like stdout: a terminal or not. */
  function output(isTTY: boolean) {
    const captured = { text: '' };
    const stream = Object.assign(
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          captured.text += chunk.toString();
          done();
        },
      }),
      { isTTY },
    );
    return { stream, captured };
  }

  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('writes one JSON document a line when stdout is not a terminal', async () => {
    const { stream, captured } = output(false);
    createLogger({ level: 'info', environment: 'development' }, stream).info({ status: 200 }, 'request completed');
    await settle();
    expect(JSON.parse(captured.text.trim())).toMatchObject({ level: INFO, status: 200, msg: 'request completed' });
  });

  it('pretty-prints for a terminal outside production', async () => {
    const { stream, captured } = output(true);
    createLogger({ level: 'info', environment: 'development' }, stream).info({ status: 200 }, 'request completed');
    for (let turn = 0; turn < 100 && captured.text === ''; turn += 1) await settle();
    expect(captured.text).toContain('request completed');
    expect(captured.text).toMatch(/INFO/);
    expect(() => JSON.parse(captured.text.trim())).toThrow();
  });

  it('writes JSON in production even to a terminal', async () => {
    const { stream, captured } = output(true);
    createLogger({ level: 'info', environment: 'production' }, stream).info('started');
    await settle();
    expect(JSON.parse(captured.text.trim())).toMatchObject({ level: INFO, msg: 'started' });
  });

  it('writes nothing below LOG_LEVEL', async () => {
    const { stream, captured } = output(false);
    const logger = createLogger({ level: 'warn', environment: 'production' }, stream);
    logger.info('routine');
    logger.warn('worth a look');
    await settle();
    expect(captured.text).not.toContain('routine');
    expect(captured.text).toContain('worth a look');
  });
});
