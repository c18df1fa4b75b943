import { type OperationEntry, operationTable } from '@svc/contract';
import request from 'supertest';
import { type Principal, requireScopes } from '../../src/http/bearer';
import { toDetail } from '../../src/http/error-mapper';
import { parseFormEncoded } from '../../src/http/form-encoding';
import { canonicalJson } from '../../src/http/idempotency';
import type { TokenRequestBody } from '../../src/oauth/operations';
import { requestTokens } from '../../src/oauth/token-endpoint';
import { expectError } from '../support/auth-steps';
import { testDatabases } from '../support/databases';
import { exampleRequest } from '../support/example-requests';
import { type AppFixture, createTestStore, fullAccess, suiteHarness } from '../support/harness';
import { apiErrorFrom } from '../support/store-api';

/** Names every plain object inherits from `Object.prototype`: a lookup by such a client-chosen key must not find them. */
const PROTOTYPE_KEYS = ['constructor', 'toString', '__proto__', 'valueOf', 'hasOwnProperty'] as const;

const entries = Object.values(operationTable) as OperationEntry[];
const EXAMPLE_STORE_ID = '5c9f1e2d-3b4a-4c6d-8e7f-9a0b1c2d3e4f';

function principalWith(scopes: string[]): Principal {
  return {
    tokenId: 't',
    appId: 'a',
    appName: 'App',
    appAuthEpoch: 1,
    appApiVersion: null,
    versionId: 'v',
    installationId: 'i',
    installedAt: 0,
    generation: 1,
    grantRevision: 1,
    storeId: 's',
    routeEpoch: 1,
    scopes: new Set(scopes),
  };
}

describe('lookups keyed by what a client sent never reach Object.prototype', () => {
  const productsCreate = operationTable['products.create'];

  it.each(PROTOTYPE_KEYS)('requireScopes: a body field %p needs no field scope (it names none)', (key) => {
    const body = JSON.parse(`{"name":"Oud","${key}":1}`) as object;
    expect(() => requireScopes(principalWith(['products:write']), productsCreate, body)).not.toThrow();
  });

  it('requireScopes still asks for the field scope of a field that has one', () => {
    expect(() => requireScopes(principalWith(['products:write']), productsCreate, { price: '1.00' })).toThrow(
      expect.objectContaining({ code: 'INSUFFICIENT_SCOPE' }),
    );
  });

  it('the canonical JSON of an Idempotency-Key request keeps a "__proto__" key, so the request hash tells such bodies apart', () => {
    const withKey = JSON.parse('{"name":"Oud","__proto__":{"name":"Amber"}}') as unknown;
    expect(canonicalJson(withKey)).toBe('{"__proto__":{"name":"Amber"},"name":"Oud"}');
    expect(canonicalJson(withKey)).not.toBe(canonicalJson({ name: 'Oud' }));
  });

  it.each(PROTOTYPE_KEYS)('query strings and form bodies keep a field named %p as an own key', (key) => {
    const fields = parseFormEncoded(`${key}=1&grant_type=refresh_token`);
    expect(Object.keys(fields).sort()).toEqual([key, 'grant_type'].sort());
    expect(fields[key]).toBe('1');
  });

  it.each(PROTOTYPE_KEYS)('a validation problem under %p is reported in the body, not at an inherited location', (key) => {
    expect(toDetail({ path: `/${key}/name`, message: 'is not valid' }).location).toBe('body');
  });
});

describe.each(testDatabases())('a prototype key where none is expected answers 4xx, never 500, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let storeId = '';
  let client: AppFixture;
  let accessToken = '';

  beforeAll(async () => {
    const store = await createTestStore(h);
    storeId = store.store.id;
    const access = await fullAccess(h, store);
    client = access.client;
    accessToken = access.tokens.access_token;
  });

  it.each(PROTOTYPE_KEYS)('grant_type %p at the token endpoint is INVALID_GRANT_TYPE', async (key) => {
    const error = await apiErrorFrom(requestTokens(h.services, client.app.id, { grant_type: key } as unknown as TokenRequestBody, h.clock.now()));
    expect(error.code).toBe('INVALID_GRANT_TYPE');
  });

  const bodyless = entries.filter((entry) => entry.requestMediaTypes.length === 0);
  const cases = bodyless.flatMap((entry) => PROTOTYPE_KEYS.map((key) => [entry.operationId, key, entry] as const));

  it('covers every operation that takes no body', () => {
    expect(bodyless.map((entry) => entry.operationId)).toEqual(
      expect.arrayContaining(['me', 'products.list', 'products.get', 'oauth.authorize', 'webhooks.test']),
    );
  });

  it.each(cases)('%s with the JSON body {"%s":1}: 415 UNSUPPORTED_MEDIA_TYPE in the error format', async (_operationId, key, entry) => {
    const example = exampleRequest(entry);
    let call = request(h.app)[entry.method](example.url.replace(EXAMPLE_STORE_ID, storeId)).set(example.headers);
    if (entry.auth === 'bearer') call = call.set('Authorization', `Bearer ${accessToken}`);
    if (entry.auth === 'client') call = call.set('Authorization', client.basic);
    const response = await call.set('Content-Type', 'application/json').send(`{"${key}":1}`);
    expectError(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });
});
