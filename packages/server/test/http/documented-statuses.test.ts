import { type OperationEntry, operationTable } from '@svc/contract';
import request from 'supertest';
import { createApp } from '../../src/app';
import { ApiError } from '../../src/core/errors';
import { handlers } from '../../src/generated/registry';
import { documentsStatus } from '../../src/http/documented-statuses';
import { type Handlers, isNotImplemented } from '../../src/http/handler';
import { expectError } from '../support/auth-steps';
import { OVERSIZED_TEXT } from '../support/catalog-fixtures';
import { testDatabases } from '../support/databases';
import { exampleRequest } from '../support/example-requests';
import { createTestStore, fullAccess, suiteHarness } from '../support/harness';

describe('documentsStatus', () => {
  const responses = new Set(['200', '401', '404', '4XX', 'default']);

  it.each([200, 401, 404])('a listed status (%p) is documented', (status) => expect(documentsStatus(responses, status)).toBe(true));
  it('a status within a listed range (4XX) is documented', () => expect(documentsStatus(responses, 409)).toBe(true));
  it.each([500, 501])('%p is documented by default', (status) => expect(documentsStatus(responses, status)).toBe(true));
  it.each([503, 302, 201])('%p is not documented by default: it must be listed', (status) => expect(documentsStatus(responses, status)).toBe(false));
  it('without default, 500 must be listed too', () => expect(documentsStatus(new Set(['200']), 500)).toBe(false));
});

describe.each(testDatabases())('an answer with a status its operation does not document, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let storeId = '';
  let accessToken = '';
  /** `me` refusing with 409 SLUG_TAKEN, a status its responses do not list. */
  const meAnswering409: Handlers = {
    ...handlers,
    me: async () => {
      throw new ApiError('SLUG_TAKEN', 'A slug on /me.');
    },
  };

  beforeAll(async () => {
    const store = await createTestStore(h);
    storeId = store.store.id;
    accessToken = (await fullAccess(h, store)).tokens.access_token;
  });
  afterEach(() => jest.restoreAllMocks());

  const callMe = (validateResponses: boolean) =>
    request(createApp({ config: { validateResponses, exposeInternalErrors: true }, services: h.services, handlers: meAnswering409 }))
      .get(`/stores/${storeId}/v1/me`)
      .set('Authorization', `Bearer ${accessToken}`);

  it('with response validation on (tests) is a logged 500 INTERNAL naming the operation and the status', async () => {
    const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const response = await callMe(true);
    expectError(response, 500, 'INTERNAL');
    expect(response.body.error.message).toBe('me answered 409, a status its responses in the spec do not document.');
    expect(logged).toHaveBeenCalledWith(expect.stringContaining('me answered 409'));
  });

  it('with response validation off (production) is answered as it is', async () => {
    expectError(await callMe(false), 409, 'SLUG_TAKEN');
  });

  it('a documented refusal passes unchanged', async () => {
    expectError(await request(h.app).get(`/stores/${storeId}/v1/me`), 401, 'UNAUTHENTICATED');
  });

  it('an unexpected failure is the 500 that default documents, not a complaint about the status', async () => {
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const failing: Handlers = {
      ...handlers,
      me: async () => {
        throw new Error('the database went away');
      },
    };
    const response = await request(createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services: h.services, handlers: failing }))
      .get(`/stores/${storeId}/v1/me`)
      .set('Authorization', `Bearer ${accessToken}`);
    expectError(response, 500, 'INTERNAL');
    expect(response.body.error.message).toContain('the database went away');
  });

  describe('refusals that come before the handler are documented on every operation that takes no body', () => {
    const bodyless = (Object.values(operationTable) as OperationEntry[]).filter(
      (entry) => entry.requestMediaTypes.length === 0 && !isNotImplemented(handlers[entry.operationId as keyof typeof handlers]),
    );
    const call = (entry: OperationEntry, query = '') => {
      const example = exampleRequest(entry);
      const url = example.url.replace('5c9f1e2d-3b4a-4c6d-8e7f-9a0b1c2d3e4f', storeId);
      return request(h.app)
        [entry.method](`${url}${url.includes('?') ? '&' : '?'}${query}`)
        .set(example.headers)
        .set('Authorization', `Bearer ${accessToken}`);
    };
    const cases = bodyless.map((entry) => [entry.operationId, entry] as const);
    // The OAuth endpoints name request refusals INVALID_REQUEST; the store API and the probes, VALIDATION_FAILED and UNKNOWN_FIELD.
    const atOAuth = (entry: { path: string }) => entry.path.startsWith('/oauth/');

    it.each(cases)('%s with a body over 65536 bytes: 413 PAYLOAD_TOO_LARGE', async (_id, entry) => {
      expectError(
        await call(entry)
          .set('Content-Type', 'application/json')
          .send(JSON.stringify({ note: OVERSIZED_TEXT })),
        413,
        'PAYLOAD_TOO_LARGE',
      );
    });

    it.each(cases)('%s with a text body: 415 UNSUPPORTED_MEDIA_TYPE', async (_id, entry) => {
      expectError(await call(entry).set('Content-Type', 'text/plain').send('hello'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it.each(cases)('%s with U+0000 in the query: 400', async (_id, entry) => {
      expectError(await call(entry, 'note=%00'), 400, atOAuth(entry) ? 'INVALID_REQUEST' : 'VALIDATION_FAILED');
    });

    it.each(cases)('%s with a query parameter it does not know: 422 UNKNOWN_FIELD (400 INVALID_REQUEST at /oauth)', async (_id, entry) => {
      const response = await call(entry, 'colour=red');
      if (atOAuth(entry)) expectError(response, 400, 'INVALID_REQUEST');
      else expectError(response, 422, 'UNKNOWN_FIELD');
    });
  });
});
