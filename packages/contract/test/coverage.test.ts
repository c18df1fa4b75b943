/**
 * Holds the bundled spec against the interface document itself (spec/source/interface.md):
 * every operation with its method, path, operationId and scopes, every scope, every field table.
 */
import { type OperationEntry, operationTable } from '../src';
import { codeSpans, contractScopes, fieldTable, knownShapeOperations, oauthOperations, pathOnlyOperations, scopeAlternatives } from './interface-tables';
import { interfaceDocument, isObject, type Json, type JsonObject, operationById, resolve, spec, specOperations } from './spec-helpers';

const operations = specOperations();
const find = (method: string, path: string) => operations.find((o) => o.method === method && o.path === path);
const securityOf = (operation: JsonObject) =>
  ((operation.security as JsonObject[] | undefined) ?? []).map((requirement) => requirement as Record<string, string[]>);
const sortAlternatives = (alternatives: string[][]) => alternatives.map((a) => [...a].sort()).sort((a, b) => a.join().localeCompare(b.join()));

/** Operations of the running service that the interface document leaves to operators: liveness and readiness. */
const SERVICE_PROBES = ['get /livez', 'get /readyz'];

/**
 * Store operations the service adds to the webhook group the interface names
 * (docs/decisions/0067-events-feed-and-delivery-log.md, docs/decisions/0068-recover.md): the events
 * feed, each subscription's delivery log and recover. Like the group's own operations, each needs a
 * valid access token only.
 */
const EVENT_ADDITIONS = [
  { key: 'get /stores/{storeId}/v1/events', tag: 'Events' },
  { key: 'get /stores/{storeId}/v1/events/{id}', tag: 'Events' },
  { key: 'get /stores/{storeId}/v1/webhook-subscriptions/{id}/deliveries', tag: 'Webhook subscriptions' },
  { key: 'get /stores/{storeId}/v1/webhook-subscriptions/{id}/deliveries/{eventId}', tag: 'Webhook subscriptions' },
  { key: 'post /stores/{storeId}/v1/webhook-subscriptions/{id}/recover', tag: 'Webhook subscriptions' },
];

/**
 * The OAuth server's standard endpoints the service adds (docs/decisions/0071-oauth-standard-endpoints.md):
 * metadata for discovery (RFC 8414, no credentials), revocation (RFC 7009) and
 * introspection (RFC 7662), which take the token endpoint's client authentication.
 */
const OAUTH_STANDARD_ADDITIONS = [
  { key: 'get /.well-known/oauth-authorization-server', schemes: [] as string[] },
  { key: 'post /oauth/revoke', schemes: ['clientBasic'] },
  { key: 'post /oauth/introspect', schemes: ['clientBasic'] },
];

describe('operations of the interface document', () => {
  it.each(knownShapeOperations())('$operationId is $method $path with the documented scopes', (documented) => {
    const found = find(documented.method, documented.path);
    expect(found?.operation.operationId).toBe(documented.operationId);
    const security = securityOf(found!.operation);
    expect(security.length).toBeGreaterThan(0);
    for (const requirement of security) expect(Object.keys(requirement)).toEqual(['oauth2']);
    const expected = scopeAlternatives(documented.scopeCell);
    const actual = security.map((requirement) => requirement.oauth2 ?? []);
    if (expected === 'not shown') {
      expect(actual).toEqual([[]]); // decided: a valid token only, like webhooks.list
    } else {
      expect(sortAlternatives(actual)).toEqual(sortAlternatives(expected));
    }
  });

  it('products.create also needs products.prices:write for price fields', () => {
    const { operation } = operationById('products.create');
    expect(operation['x-field-scopes']).toMatchObject({ price: ['products.prices:write'] });
  });

  it.each(pathOnlyOperations())('$group: $method $path exists and needs an access token', ({ method, path }) => {
    const found = find(method, path);
    expect(found).toBeDefined();
    expect(securityOf(found!.operation).every((r) => 'oauth2' in r)).toBe(true);
  });

  it.each(oauthOperations())('OAuth: $method $path exists', ({ method, path }) => {
    const found = find(method, path);
    expect(found).toBeDefined();
    const schemes = securityOf(found!.operation).flatMap((r) => Object.keys(r));
    if (path === '/oauth/authorize') expect(schemes).toEqual([]);
    else expect(schemes).toEqual(['clientBasic']);
  });

  it('the service adds only its probes: no token, tag Health (docs/decisions/0051-probes-stop-and-timeouts.md)', () => {
    for (const key of SERVICE_PROBES) {
      const [method = '', path = ''] = key.split(' ');
      const found = find(method, path);
      expect(found?.operation.tags).toEqual(['Health']);
      expect(securityOf(found!.operation)).toEqual([]);
    }
  });

  it.each(EVENT_ADDITIONS)('the service adds $key: a valid token only, tagged $tag', ({ key, tag }) => {
    const [method = '', path = ''] = key.split(' ');
    const found = find(method, path);
    expect(found?.operation.tags).toEqual([tag]);
    expect(securityOf(found!.operation)).toEqual([{ oauth2: [] }]);
  });

  it.each(OAUTH_STANDARD_ADDITIONS)('the service adds $key, tagged OAuth', ({ key, schemes }) => {
    const [method = '', path = ''] = key.split(' ');
    const found = find(method, path);
    expect(found?.operation.tags).toEqual(['OAuth']);
    expect(securityOf(found!.operation).flatMap((r) => Object.keys(r))).toEqual(schemes);
  });

  it('has no operation the interface does not name, besides the probes, the event additions and the standard OAuth endpoints', () => {
    const documented = new Set([
      ...SERVICE_PROBES,
      ...EVENT_ADDITIONS.map((addition) => addition.key),
      ...OAUTH_STANDARD_ADDITIONS.map((addition) => addition.key),
      ...knownShapeOperations().map((o) => `${o.method} ${o.path}`),
      ...pathOnlyOperations().map((o) => `${o.method} ${o.path}`),
      ...oauthOperations().map((o) => `${o.method} ${o.path}`),
    ]);
    expect(operations.map((o) => `${o.method} ${o.path}`).filter((key) => !documented.has(key))).toEqual([]);
    expect(operations).toHaveLength(documented.size);
  });

  it('operationIds are unique and in the interface style', () => {
    // The style is also a lint rule: Spectral svc-operation-id-style, Redocly rule/operation-id-style.
    const ids = operations.map((o) => o.operation.operationId as string);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z]+(_[a-z]+)*(\.[a-z]+(_[a-z]+)*)*$/);
  });
});

describe('scopes', () => {
  const declared = (resolve((spec.components as JsonObject).securitySchemes as Json) as JsonObject).oauth2 as JsonObject;
  const scopes = ((declared.flows as JsonObject).authorizationCode as JsonObject).scopes as Record<string, string>;

  it('declares exactly the scopes of the contract, each with a description', () => {
    expect(Object.keys(scopes).sort()).toEqual([...contractScopes()].sort());
    for (const description of Object.values(scopes)) expect(description.length).toBeGreaterThan(10);
  });

  it('uses only declared scopes', () => {
    const used = operations.flatMap((o) => securityOf(o.operation).flatMap((r) => r.oauth2 ?? []));
    for (const scope of used) expect(Object.keys(scopes)).toContain(scope);
  });
});

/** The property schemas of an object schema, across oneOf variants. */
function propertiesOf(schemaName: string): Map<string, JsonObject> {
  const schema = resolve({ $ref: `#/components/schemas/${schemaName}` });
  const variants = Array.isArray(schema.oneOf) ? schema.oneOf.map(resolve) : [schema];
  const result = new Map<string, JsonObject>();
  for (const variant of variants) {
    for (const [name, property] of Object.entries((variant.properties as JsonObject) ?? {})) result.set(name, property as JsonObject);
  }
  return result;
}

/** The JSON types a property schema allows, through references and oneOf. */
function typesOf(property: JsonObject): Set<string> {
  const resolved = resolve(property);
  const types = new Set<string>();
  if (typeof resolved.type === 'string') types.add(resolved.type);
  if (Array.isArray(resolved.type)) for (const t of resolved.type) types.add(t as string);
  if ('const' in resolved) types.add(typeof resolved.const === 'number' ? 'integer' : typeof resolved.const);
  for (const variant of (resolved.oneOf as Json[] | undefined) ?? []) for (const t of typesOf(variant as JsonObject)) types.add(t);
  return types;
}

function enumOf(property: JsonObject): string[] | undefined {
  const resolved = resolve(property);
  if (Array.isArray(resolved.enum)) return resolved.enum as string[];
  for (const variant of (resolved.oneOf as Json[] | undefined) ?? []) {
    const found = enumOf(variant as JsonObject);
    if (found) return found;
  }
  return undefined;
}

function expectFieldMatches(schemaName: string, heading: string) {
  const properties = propertiesOf(schemaName);
  for (const row of fieldTable(heading)) {
    const property = properties.get(row.field);
    expect({ schema: schemaName, field: row.field, present: property !== undefined }).toEqual({ schema: schemaName, field: row.field, present: true });
    const types = typesOf(property!);
    const type = row.type;
    if (type.startsWith('integer')) expect(types).toContain('integer');
    if (type.startsWith('boolean')) expect(types).toContain('boolean');
    if (type.startsWith('string')) expect(types).toContain('string');
    if (type.startsWith('array')) expect(types).toContain('array');
    if (type.includes('or null') || type.includes('null is returned')) expect(types).toContain('null');
    if (type.includes('(uuid)')) expect(resolve(property!).format).toBe('uuid');
    if (type === 'enum') {
      const values = [...new Set(codeSpans(row.notes).filter((value) => !value.includes(' ')))];
      if (values.length > 0 && !row.notes.startsWith('Same values')) expect([...(enumOf(property!) ?? [])].sort()).toEqual([...values].sort());
    }
  }
}

describe('field tables', () => {
  it('Product', () => expectFieldMatches('Product', '### Product\n'));
  it('Product create body, with its required fields', () => {
    expectFieldMatches('ProductCreate', '### Product create body');
    const schema = resolve({ $ref: '#/components/schemas/ProductCreate' });
    const required = fieldTable('### Product create body')
      .filter((row) => row.required === 'yes')
      .map((row) => row.field);
    expect([...(schema.required as string[])].sort()).toEqual(required.sort());
  });
  it('Inventory item', () => expectFieldMatches('InventoryItem', '### Inventory item'));
  it('Webhook subscription', () => expectFieldMatches('WebhookSubscription', '### Webhook subscription'));
  it('execution', () => expectFieldMatches('Execution', '### execution'));
  it('meta of lists', () => expectFieldMatches('ListMeta', '### meta'));
  it('token response', () => expectFieldMatches('TokenResponse', '### POST /oauth/token'));
  it('every envelope carries data, meta and execution', () => {
    const envelopes = Object.keys(
      spec.components && (spec.components as JsonObject).schemas ? ((spec.components as JsonObject).schemas as JsonObject) : {},
    ).filter((name) => name.endsWith('Envelope'));
    expect(envelopes.length).toBeGreaterThan(20);
    for (const name of envelopes) expect([...propertiesOf(name).keys()].sort()).toEqual(['data', 'execution', 'meta']);
  });
  it('authorize takes exactly the documented parameters', () => {
    const documented = fieldTable('### GET /oauth/authorize parameters').map((row) => row.field);
    const { parameters } = operationById('oauth.authorize');
    expect(
      parameters
        .filter((p) => p.in === 'query')
        .map((p) => p.name)
        .sort(),
    ).toEqual([...documented].sort());
    // The API-Version header, which every operation takes, is no authorize parameter.
    const optional = parameters.filter((p) => p.in === 'query' && p.required !== true).map((p) => p.name);
    expect(optional).toEqual(['version_id']);
  });
});

describe('limits of the interface', () => {
  const queryParameter = (operationId: string, name: string) => resolve(operationById(operationId).parameters.find((p) => p.name === name)?.schema as Json);
  it('page size 1 to 100, default 25; cursor at most 4096; search at most 100', () => {
    expect(queryParameter('products.list', 'limit')).toMatchObject({ minimum: 1, maximum: 100, default: 25 });
    expect(queryParameter('products.list', 'cursor')).toMatchObject({ maxLength: 4096 });
    expect(queryParameter('products.list', 'search')).toMatchObject({ maxLength: 100 });
    expect(queryParameter('categories.list', 'search')).toMatchObject({ maxLength: 100 });
  });
  it('Idempotency-Key 1 to 128 on every creating POST the interface names', () => {
    for (const id of ['products.create', 'categories.create', 'inventory.adjust']) {
      const header = operationById(id).parameters.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
      expect(header?.required).toBe(true);
      expect(resolve(header?.schema as Json)).toMatchObject({ minLength: 1, maxLength: 128 });
    }
  });
  it('If-Match required on the updates that return ETags', () => {
    for (const id of ['products.content', 'products.prices', 'categories.update']) {
      const header = operationById(id).parameters.find((p) => p.in === 'header' && p.name === 'If-Match');
      expect(header?.required).toBe(true);
      expect(new RegExp(resolve(header?.schema as Json).pattern as string).test('"p1.7.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"')).toBe(true);
    }
  });
  it('state 16 to 512, scope up to 2048, code_challenge 43 base64url, verifier 43 to 128', () => {
    expect(queryParameter('oauth.authorize', 'state')).toMatchObject({ minLength: 16, maxLength: 512 });
    expect(queryParameter('oauth.authorize', 'scope')).toMatchObject({ maxLength: 2048 });
    expect(new RegExp(queryParameter('oauth.authorize', 'code_challenge').pattern as string).test('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')).toBe(true);
    const verifier = resolve((resolve({ $ref: '#/components/schemas/TokenRequest' }).properties as JsonObject).code_verifier);
    const pattern = new RegExp(verifier.pattern as string);
    expect(pattern.test('a'.repeat(43))).toBe(true);
    expect(pattern.test('a'.repeat(42))).toBe(false);
    expect(pattern.test('a'.repeat(128))).toBe(true);
    expect(pattern.test('a'.repeat(129))).toBe(false);
  });
  it('ids in paths match ^[1-9][0-9]*$ and store ids are UUIDs', () => {
    const id = resolve(operationById('products.get').parameters.find((p) => p.name === 'id')?.schema as Json);
    expect(id.pattern).toBe('^[1-9][0-9]*$');
    const store = resolve(operationById('products.get').parameters.find((p) => p.name === 'storeId')?.schema as Json);
    expect(store.format).toBe('uuid');
  });
  it('Me publishes the limits with their values', () => {
    const limits = propertiesOf('PublishedLimits');
    const values = Object.fromEntries([...limits].map(([name, schema]) => [name, resolve(schema).const]));
    expect(values).toEqual({ pageDefault: 25, pageMax: 100, accessSeconds: 900, bodyBytes: 65536, quotaProofMs: 5000, policyLeaseMs: 45000 });
  });
});

describe('the error format', () => {
  it('INVALID_FILTER belongs to the filters the spec marks: a list’s query parameters besides paging, never a report’s range', () => {
    const entries = Object.values(operationTable) as OperationEntry[];
    expect(operationTable['products.list'].filters).toEqual(['status', 'category', 'search', 'updated_since']);
    // The one unpaged list: its `updated_since` only filters.
    expect(operationTable['webhooks.list'].filters).toEqual(['updated_since']);
    const isList = (entry: OperationEntry) => entry.paged || entry.operationId === 'webhooks.list';
    for (const entry of entries) {
      const query = operationById(entry.operationId)
        .parameters.filter((p) => p.in === 'query')
        .map((p) => p.name);
      if (entry.auth !== 'bearer') continue; // OAuth parameters have their own codes
      expect({ operation: entry.operationId, filters: entry.filters }).toEqual({
        operation: entry.operationId,
        filters: isList(entry) ? query.filter((name) => name !== 'limit' && name !== 'cursor') : [],
      });
    }
    // `updated_since` on every list whose records change (docs/guides/04-paging.md, the sync loop).
    const syncing = entries.filter((entry) => entry.filters.includes('updated_since')).map((entry) => entry.operationId);
    expect(syncing.sort()).toEqual(
      [
        'abandoned_carts.list',
        'categories.list',
        'coupons.list',
        'inventory.list',
        'orders.list',
        'pages.list',
        'payments.list',
        'products.list',
        'reviews.list',
        'webhooks.list',
      ].sort(),
    );
    expect(entries.filter((entry) => entry.operationId.startsWith('analytics.')).map((entry) => entry.filters)).toEqual([[], [], [], []]);
  });
  it('every operation documents a 4xx answer in the error format', () => {
    for (const { operation } of operations) {
      const responses = operation.responses as JsonObject;
      const clientErrors = Object.keys(responses).filter((status) => /^4\d\d$/.test(status));
      expect({ id: operation.operationId, count: clientErrors.length > 0 }).toEqual({ id: operation.operationId, count: true });
      for (const status of clientErrors) {
        const content = resolve(responses[status]).content as JsonObject;
        expect((content['application/json'] as JsonObject).schema).toEqual({ $ref: '#/components/schemas/ErrorBody' });
      }
    }
  });

  it('every error code of the interface is in the ErrorCode enum', () => {
    const named = [...new Set(interfaceDocument.slice(interfaceDocument.indexOf('## Errors')).match(/`[A-Z][A-Z_]+[A-Z]`/g) ?? [])].map((c) =>
      c.replace(/`/g, ''),
    );
    const codes = resolve({ $ref: '#/components/schemas/ErrorCode' }).enum as string[];
    expect(named.length).toBeGreaterThan(15);
    for (const code of named) expect(codes).toContain(code);
  });

  it('the error schema is {error: {code, message, ...}, meta: {request_id}}', () => {
    const schema = resolve({ $ref: '#/components/schemas/ErrorBody' });
    expect(schema.required).toEqual(['error', 'meta']);
    expect(isObject(schema.properties as Json)).toBe(true);
  });
});
