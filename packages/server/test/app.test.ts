import { type OperationEntry, operationTable } from '@svc/contract';
import request from 'supertest';
import { handlers } from '../src/generated/registry';
import { isNotImplemented } from '../src/http/handler';
import { testDatabases } from './support/databases';
import { exampleRequest } from './support/example-requests';
import {
  type AppFixture,
  createTestApp,
  createTestStore,
  fullAccess,
  type Harness,
  installWithTokens,
  type StoreFixture,
  suiteHarness,
} from './support/harness';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STORE = '/stores/5c9f1e2d-3b4a-4c6d-8e7f-9a0b1c2d3e4f/v1';
const [sqlite] = testDatabases();

const h = suiteHarness(sqlite!);
let app: Harness['app'];
let client: AppFixture;
let accessToken = '';
let storeId = '';
let store: StoreFixture;

beforeAll(async () => {
  app = h.app;
  store = await createTestStore(h);
  storeId = store.store.id;
  const access = await fullAccess(h, store);
  client = access.client;
  accessToken = access.tokens.access_token;
});

/** Asserts the interface's error format and returns the error object. */
function expectError(response: request.Response, status: number, code: string) {
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code });
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.body.meta.request_id).toMatch(UUID);
  expect(response.headers['x-request-id']).toBe(response.body.meta.request_id);
  expect(typeof response.body.error.message).toBe('string');
  return response.body.error as { code: string; message: string; details?: { location: string; field: string }[] };
}

/** Operations still answered by their generated stub. */
const isStub = (entry: OperationEntry) => isNotImplemented(handlers[entry.operationId as keyof typeof handlers]);

describe('every operation is routed to its handler', () => {
  const entries = Object.values(operationTable) as OperationEntry[];

  function send(entry: OperationEntry) {
    const example = exampleRequest(entry);
    const url = example.url.replace('5c9f1e2d-3b4a-4c6d-8e7f-9a0b1c2d3e4f', storeId);
    let call = request(app)[entry.method](url).set(example.headers);
    if (entry.auth === 'bearer') call = call.set('Authorization', `Bearer ${accessToken}`);
    if (entry.auth === 'client') call = call.set('Authorization', client.basic);
    if (example.contentType === 'application/x-www-form-urlencoded') return call.type('form').send(example.body as Record<string, string>);
    if (example.body !== undefined) return call.set('Content-Type', example.contentType ?? 'application/json').send(example.body as object);
    return call;
  }

  it('leaves no operation of the spec to its generated stub (501 NOT_IMPLEMENTED)', () => {
    expect(entries.filter(isStub).map((entry) => entry.operationId)).toEqual([]);
  });

  it.each(entries.filter((entry) => !isStub(entry)).map((entry) => [entry.operationId, entry] as const))(
    '%s is implemented: a request built from its examples gets a documented answer',
    async (_id, entry) => {
      const response = await send(entry);
      expect(response.status).not.toBe(501);
      expect(response.status).toBeLessThan(500);
      expect(response.body?.error?.message).not.toBe('No such endpoint.'); // routed (a 404 for the example's id is fine)
    },
  );
});

describe('errors in the interface format', () => {
  it('an unknown path is 404 NOT_FOUND', async () => {
    expectError(await request(app).get('/no/such/path'), 404, 'NOT_FOUND');
    expectError(await request(app).get(`${STORE}/no-such-resource`), 404, 'NOT_FOUND');
  });

  it('an unknown method on a known path is 405 METHOD_NOT_ALLOWED', async () => {
    expectError(await request(app).put(`${STORE}/products`).send({}), 405, 'METHOD_NOT_ALLOWED');
  });

  it('a 405 carries Allow (RFC 9110) and names the operations of the path, and those below it that take the method', async () => {
    const response = await request(app)
      .patch(`/stores/${storeId}/v1/products/42`)
      .set('Authorization', `Bearer ${accessToken}`)
      .send({ description: 'Aged oud.' });
    const error = expectError(response, 405, 'METHOD_NOT_ALLOWED') as { message: string; allowed_methods?: string[] };
    const onPath = (Object.values(operationTable) as OperationEntry[]).filter((entry) => entry.path === '/stores/{storeId}/v1/products/{id}');
    const methods = onPath.map((entry) => entry.method.toUpperCase());
    expect(methods.length).toBeGreaterThan(0);
    expect(response.headers.allow).toBe(methods.join(', '));
    expect(error.allowed_methods).toEqual(methods);
    for (const entry of onPath) expect(error.message).toContain(entry.operationId);
    expect(error.message).toContain('/stores/{storeId}/v1/products/{id} does not take PATCH');
    expect(error.message).toContain('…/content (products.content)');
    // At /oauth too, and for a path without a parameter.
    const oauth = await request(app).get('/oauth/token');
    expect(oauth.headers.allow).toBe('POST');
    expect(expectError(oauth, 405, 'METHOD_NOT_ALLOWED').message).toBe('/oauth/token does not take GET: it takes POST (oauth.token).');
  });

  it('a malformed store id is 400 VALIDATION_FAILED with a detail for the path', async () => {
    const error = expectError(await request(app).get('/stores/not-a-uuid/v1/products'), 400, 'VALIDATION_FAILED');
    expect(error.details).toEqual(expect.arrayContaining([expect.objectContaining({ location: 'path', field: 'storeId' })]));
  });

  it.each(['0', '01', '-1', '1234567890123456', 'abc'])('a bad product id %p is 400 VALIDATION_FAILED', async (id) => {
    expectError(await request(app).get(`${STORE}/products/${id}`), 400, 'VALIDATION_FAILED');
  });

  it('an out-of-range page size is 400 VALIDATION_FAILED', async () => {
    for (const limit of ['0', '101', 'ten']) expectError(await request(app).get(`${STORE}/products?limit=${limit}`), 400, 'VALIDATION_FAILED');
  });

  it('a repeated query parameter is 400 VALIDATION_FAILED', async () => {
    expectError(await request(app).get(`${STORE}/products?status=active&status=inactive`), 400, 'VALIDATION_FAILED');
  });

  it('an unknown filter is 422 UNKNOWN_FIELD', async () => {
    const error = expectError(await request(app).get(`${STORE}/products?colour=red`), 422, 'UNKNOWN_FIELD');
    expect(error.details).toEqual([expect.objectContaining({ location: 'query', field: 'colour' })]);
  });

  it('an unknown body field is 422 UNKNOWN_FIELD naming the field', async () => {
    const response = await request(app).post(`${STORE}/products`).set('Idempotency-Key', 'k-1').send({ name: 'Oud', product_kind: 'physical', colour: 'red' });
    const error = expectError(response, 422, 'UNKNOWN_FIELD');
    expect(error.details).toEqual([expect.objectContaining({ location: 'body', field: '/colour' })]);
  });

  it('a POST without Idempotency-Key is 400 IDEMPOTENCY_KEY_REQUIRED', async () => {
    const error = expectError(await request(app).post(`${STORE}/products`).send({ name: 'Oud', product_kind: 'physical' }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
    expect(error.message).toBe('This request needs an Idempotency-Key header.');
  });

  it('an empty Idempotency-Key (a key command that failed in the shell) is 400 IDEMPOTENCY_KEY_REQUIRED that says it is empty', async () => {
    for (const key of ['', '   ']) {
      const response = await request(app)
        .post(`/stores/${storeId}/v1/products`)
        .set('Authorization', `Bearer ${accessToken}`)
        .set('Idempotency-Key', key)
        .send({ name: 'Oud', product_kind: 'physical' });
      const error = expectError(response, 400, 'IDEMPOTENCY_KEY_REQUIRED');
      expect(error.message).toBe('The Idempotency-Key header is empty: send 1 to 128 characters of your own, one key per intended change (a UUID will do).');
      expect(error.details).toEqual([{ location: 'header', field: 'Idempotency-Key', message: 'is empty' }]);
    }
  });

  it('a 403 INSUFFICIENT_SCOPE names the scope and how the app asks the store’s owner for it', async () => {
    const reader = await createTestApp(h, { required: ['products:read'], optional: [] });
    const tokens = await installWithTokens(h, store, reader, ['products:read']);
    const response = await request(app)
      .post(`/stores/${storeId}/v1/products`)
      .set('Authorization', `Bearer ${tokens.access_token}`)
      .set('Idempotency-Key', 'k-scope')
      .send({ name: 'Oud', product_kind: 'physical' });
    const error = expectError(response, 403, 'INSUFFICIENT_SCOPE') as { message: string; required_scopes?: string[] };
    expect(error.required_scopes).toEqual(['products:write']);
    expect(error.message).toBe(
      "This operation needs the scope products:write, which the installation's grant does not hold. The app gets it by sending the store's owner to /oauth/authorize with the scope in scope (its app version must list it); the owner's approval adds it to the grant, and the next token pair holds it.",
    );
    expect(response.headers['www-authenticate']).toContain('scope="products:write"');
  });

  it('an Idempotency-Key over 128 characters is 400 VALIDATION_FAILED', async () => {
    const response = await request(app).post(`${STORE}/products`).set('Idempotency-Key', 'k'.repeat(129)).send({ name: 'Oud', product_kind: 'physical' });
    expectError(response, 400, 'VALIDATION_FAILED');
  });

  it('a PATCH without If-Match is 428 PRECONDITION_REQUIRED', async () => {
    expectError(await request(app).patch(`${STORE}/products/1/content`).send({ name: 'Oud' }), 428, 'PRECONDITION_REQUIRED');
  });

  it('wrong types and overlong strings are 400 VALIDATION_FAILED with details', async () => {
    const response = await request(app)
      .post(`${STORE}/products`)
      .set('Idempotency-Key', 'k-2')
      .send({ name: 'x'.repeat(256), product_kind: 'gadget', price: 10 });
    const error = expectError(response, 400, 'VALIDATION_FAILED');
    expect(error.details?.map((d) => d.field).sort()).toEqual(expect.arrayContaining(['/name', '/price', '/product_kind']));
  });

  it('malformed JSON is 400 VALIDATION_FAILED', async () => {
    const response = await request(app).post(`${STORE}/products`).set('Idempotency-Key', 'k-3').set('Content-Type', 'application/json').send('{"name": ');
    expectError(response, 400, 'VALIDATION_FAILED');
  });

  it('a body over 65536 bytes is 413 PAYLOAD_TOO_LARGE, on the store API and OAuth alike', async () => {
    const big = { name: 'Oud', product_kind: 'physical', description: 'x'.repeat(70000) };
    expectError(await request(app).post(`${STORE}/products`).set('Idempotency-Key', 'k-4').send(big), 413, 'PAYLOAD_TOO_LARGE');
    const form = `grant_type=refresh_token&refresh_token=${'a'.repeat(70000)}`;
    expectError(await request(app).post('/oauth/token').set('Authorization', client.basic).type('form').send(form), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('a body that is not JSON is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const response = await request(app).post(`${STORE}/products`).set('Idempotency-Key', 'k-5').set('Content-Type', 'text/plain').send('name=Oud');
    expectError(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('OAuth endpoints report malformed requests as INVALID_REQUEST', async () => {
    const response = await request(app)
      .post('/oauth/token')
      .set('Authorization', client.basic)
      .send({ grant_type: 'refresh_token', client_secret: 'svc_cs_x' });
    expectError(response, 400, 'INVALID_REQUEST');
  });

  it('at the OAuth endpoints that authenticate the client, its authentication is judged before the body (RFC 6749 §5.2)', async () => {
    const wrong = `Basic ${Buffer.from(`${client.app.id}:svc_cs_${'x'.repeat(43)}`).toString('base64')}`;
    const bodies: Array<[string, object]> = [
      ['/oauth/token', { grant_type: 'client_credentials' }],
      ['/oauth/token', { grant_type: 'refresh_token', refresh_token: 'svc_at_abcdefgh', colour: 'red' }],
      ['/oauth/revoke', { token: 'x'.repeat(5000) }],
      ['/oauth/introspect', {}],
      ['/oauth/operations/lookup', { grant_type: 'password' }],
    ];
    for (const [path, body] of bodies) {
      for (const authorization of [undefined, wrong]) {
        const call = request(app).post(path);
        const response = await (authorization ? call.set('Authorization', authorization) : call).send(body);
        expectError(response, 401, 'INVALID_CLIENT');
        expect(response.headers['www-authenticate']).toMatch(/^Basic /);
      }
    }
    // Credentials in the body are a malformed request whatever the header says ("credentials are never sent in the body").
    for (const authorization of [undefined, wrong, client.basic]) {
      const call = request(app).post('/oauth/token');
      const response = await (authorization ? call.set('Authorization', authorization) : call).send({
        grant_type: 'refresh_token',
        client_id: client.app.id,
        client_secret: client.clientSecret,
      });
      expectError(response, 400, 'INVALID_REQUEST');
    }
    // Authenticated, the body is judged: the same bodies get their own refusals.
    expectError(
      await request(app).post('/oauth/token').set('Authorization', client.basic).send({ grant_type: 'client_credentials' }),
      400,
      'INVALID_GRANT_TYPE',
    );
  });

  it('at the token endpoint, an unknown grant_type is INVALID_GRANT_TYPE', async () => {
    const response = await request(app).post('/oauth/token').set('Authorization', client.basic).type('form').send('grant_type=client_credentials');
    expectError(response, 400, 'INVALID_GRANT_TYPE');
    expect(response.headers['cache-control']).toBe('no-store');
  });

  it.each([
    [
      'a code without the svc_c_ prefix',
      { grant_type: 'authorization_code', code: 'abc_c_123', redirect_uri: 'https://app.example.com/cb', code_verifier: 'v'.repeat(43) },
    ],
    ['a refresh token without the svc_rt_ prefix', { grant_type: 'refresh_token', refresh_token: 'svc_at_abcdefgh' }],
  ])('at the token endpoint, %s is INVALID_GRANT', async (_case, body) => {
    expectError(await request(app).post('/oauth/token').set('Authorization', client.basic).send(body), 400, 'INVALID_GRANT');
  });

  it('at the token endpoint, a verifier shorter than 43 characters is INVALID_REQUEST', async () => {
    const body = { grant_type: 'authorization_code', code: 'svc_c_abc', redirect_uri: 'https://app.example.com/cb', code_verifier: 'v'.repeat(42) };
    expectError(await request(app).post('/oauth/token').set('Authorization', client.basic).send(body), 400, 'INVALID_REQUEST');
  });

  it('every response carries a fresh request id', async () => {
    const [a, b] = await Promise.all([request(app).get('/nope'), request(app).get('/nope')]);
    expect(a!.headers['x-request-id']).toMatch(UUID);
    expect(a!.headers['x-request-id']).not.toBe(b!.headers['x-request-id']);
  });
});

describe('characters no field accepts', () => {
  it('U+0000 in a body or a query is 400 VALIDATION_FAILED on the store API and INVALID_REQUEST on OAuth, before anything is stored', async () => {
    const body = await request(app)
      .post(`/stores/${storeId}/v1/categories`)
      .set('Authorization', `Bearer ${accessToken}`)
      .set('Idempotency-Key', 'nul-1')
      .send({ name: 'Oud\u0000' });
    expectError(body, 400, 'VALIDATION_FAILED');
    expectError(
      await request(app).get(`/stores/${storeId}/v1/categories?search=a%00b`).set('Authorization', `Bearer ${accessToken}`),
      400,
      'VALIDATION_FAILED',
    );
    expectError(
      await request(app).post('/oauth/token').set('Authorization', client.basic).send({ grant_type: 'refresh_token', refresh_token: 'svc_rt_\u0000' }),
      400,
      'INVALID_REQUEST',
    );
    const replay = await request(app)
      .post(`/stores/${storeId}/v1/categories`)
      .set('Authorization', `Bearer ${accessToken}`)
      .set('Idempotency-Key', 'nul-1')
      .send({ name: 'Oud' });
    expect(replay.headers['idempotent-replayed']).toBeUndefined();
  });
});
