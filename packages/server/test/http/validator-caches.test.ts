import { RequestValidator } from 'express-openapi-validator/dist/middlewares/openapi.request.validator';
import { ResponseValidator } from 'express-openapi-validator/dist/middlewares/openapi.response.validator';
import { type StoreApi, storeWithFullAccess } from '../support/catalog-fixtures';
import { testDatabases } from '../support/databases';
import { suiteHarness } from '../support/harness';

type Methods = Record<string, (...args: unknown[]) => unknown>;

/** Counts the calls of the validators' build methods (private in their typings) from now on. */
function countBuilds(): () => { request: number; response: number } {
  const request = jest.spyOn(RequestValidator.prototype as unknown as Methods, 'buildMiddleware');
  const response = jest.spyOn(ResponseValidator.prototype as unknown as Methods, 'buildValidators');
  return () => ({ request: request.mock.calls.length, response: response.mock.calls.length });
}

/** Content-Types a client can make up without end; none of them may cost a validator of its own. */
const INVENTED_TYPES = ['a/b', 'a/b; x=1', 'text/plain; q=2', 'application/json; __proto__=1', 'application/json; x=1', 'application/json; x=2'];

describe.each(testDatabases())('the spec validator builds its validators per operation, not per Content-Type sent, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let api: StoreApi;

  beforeAll(async () => {
    ({ api } = await storeWithFullAccess(h));
  });
  afterEach(() => jest.restoreAllMocks());

  it('GET /me with ever new Content-Types builds no request or response validator after the first request', async () => {
    expect((await api.get('me')).status).toBe(200);
    const builds = countBuilds();
    for (const type of INVENTED_TYPES) expect((await api.get('me').set('Content-Type', type)).status).toBe(200);
    expect(builds()).toEqual({ request: 0, response: 0 });
  });

  it('POST /categories with JSON under ever new Content-Type parameters builds nothing after the first JSON request', async () => {
    expect((await api.post('categories', { name: 'Perfumes' }, 'first')).status).toBe(201);
    const builds = countBuilds();
    for (const [index, parameter] of ['x=1', 'x=2', 'charset=utf-8', 'boundary=zz'].entries()) {
      const response = await api.post('categories', { name: `Oud ${index}` }, `key-${index}`).set('Content-Type', `application/json; ${parameter}`);
      expect(response.status).toBe(201);
    }
    expect(builds()).toEqual({ request: 0, response: 0 });
  });
});
