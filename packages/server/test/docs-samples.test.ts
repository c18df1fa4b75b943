/**
 * Every code sample of the docs, run: the request each operation's samples are written from (the
 * spec's own examples) is sent to the service over a store filled as `pnpm start` fills the demo
 * store, and must get a status its operation documents. Store operations must succeed: the store
 * and token are the test's (as a reader's are theirs), a record id of the example that is not in
 * the store is replaced by one that is, and an `If-Match` by the record's current `ETag`.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { bundledSpecPath } from '@svc/contract/node';
import request from 'supertest';
import type { OpenApiDocument } from '../../../tools/codegen/bundle';
import { SAMPLE_VARIABLES, type SampleRequest, samplePath, sampleRequests } from '../../../tools/codegen/samples';
import { replayEvents } from '../src/domain/webhooks/replay';
import { createSubscription } from '../src/domain/webhooks/subscriptions/changes';
import { findInstallationOf } from '../src/platform/installations';
import { ALL_SCOPES } from '../src/platform/scopes';
import { seedDemoCatalog } from '../src/seeds/demo-catalog';
import { simulateStore } from '../src/seeds/simulation/run';
import { testDatabases } from './support/databases';
import { createTestStore, fullAccess, suiteHarness } from './support/harness';

const document = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as OpenApiDocument;
/** The table's order with deletes last, as a reader tries them: a sample must not find its record deleted by another. */
const inReadingOrder = sampleRequests(document).sort((a, b) => Number(a.operation.method === 'delete') - Number(b.operation.method === 'delete'));
/** The OAuth operations that answer a token no server issued with a success. */
const UNKNOWN_TOKEN_SUCCEEDS = new Set(['oauth.revoke', 'oauth.introspect']);
/** How many of a collection's records a sample may try before one fits it. */
const CANDIDATES = 10;

const DAY_MS = 86_400_000;
/** After the analytics examples' range (October 2026), so their report covers simulated days. */
const NOW = Date.parse('2026-11-20T09:00:00Z');

const documentedStatuses = ({ operation }: SampleRequest): number[] =>
  Object.keys((document.paths[operation.path]?.[operation.method] as { responses?: Record<string, unknown> } | undefined)?.responses ?? {})
    .filter((status) => /^\d{3}$/.test(status))
    .map(Number);

type Parameter = { name?: string; $ref?: string };
/** Whether the list at this route takes a `limit` (its parameters, `$ref`s to components resolved). */
function takesLimit(route: string): boolean {
  const list = (document.paths[route] as { get?: { parameters?: Parameter[] } } | undefined)?.get;
  const components = (document as { components?: { parameters?: Record<string, Parameter> } }).components?.parameters ?? {};
  const resolved = (parameter: Parameter) => (parameter.$ref ? components[parameter.$ref.split('/').pop() ?? ''] : parameter);
  return (list?.parameters ?? []).some((parameter) => resolved(parameter)?.name === 'limit');
}

describe.each(testDatabases())('the code samples on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let storeId: string;
  let accessToken: string;
  let clientBasic: string;

  beforeAll(async () => {
    h.clock.set(NOW - 400 * DAY_MS);
    const fixture = await createTestStore(h, 'Oud House');
    storeId = fixture.store.id;
    await seedDemoCatalog(h.services, storeId);
    h.clock.set(NOW);
    await simulateStore(h.services, { storeId, days: 60, orders: 120, seed: 13 });
    const access = await fullAccess(h, fixture);
    accessToken = access.tokens.access_token;
    clientBasic = access.client.basic;
    // The reader's app subscribed, with the last week's orders queued to it (a replay): the delivery log's samples read them.
    const installationId = (await findInstallationOf(h.db, storeId, access.client.app.id))?.id as string;
    const subscriber = { storeId, installationId, scopes: new Set<string>(ALL_SCOPES), now: h.clock.now() };
    const subscribed = await createSubscription(h.db, h.services, subscriber, {
      endpoint_url: 'https://app.example.com/webhooks/store-events',
      event_types: ['order.created', 'order.paid'],
    });
    const replayed = await replayEvents(h.db, subscriber, subscribed.row.id, {
      from: new Date(NOW - 7 * DAY_MS).toISOString(),
      to: new Date(NOW).toISOString(),
    });
    expect(replayed.events_count).toBeGreaterThan(0);
  }, 120_000);

  const authorized = (test: request.Test) => test.set('Authorization', `Bearer ${accessToken}`);
  const inStore = (route: string) => route.replace(`$${SAMPLE_VARIABLES.storeId}`, storeId);

  /**
   * Records of the collection the path's `{id}` names (products for `…/products/{id}/content`), to
   * stand for the example's id: the first that fits (an adjustment of stock needs a product that
   * keeps stock) is the one a reader would pick from their own store.
   */
  async function candidateIds(route: string): Promise<string[]> {
    const collection = route.slice(0, route.indexOf('/{id}'));
    // An unpaged list (webhook subscriptions) refuses a `limit` it does not know.
    const query = takesLimit(collection) ? { limit: CANDIDATES } : {};
    const page = await authorized(request(h.app).get(collection.replace('{storeId}', storeId)).query(query));
    return ((page.body as { data?: Array<{ id: number | string }> }).data ?? []).map((record) => String(record.id));
  }

  /** The current ETag of what the update changes: its own read, or its parent's (a product's content is the product's). */
  async function currentEtag(url: string, route: string): Promise<string> {
    const readable = (document.paths[route] as Record<string, unknown>).get !== undefined ? url : url.slice(0, url.lastIndexOf('/'));
    const read = await authorized(request(h.app).get(readable.split('?')[0] ?? readable));
    expect(read.headers.etag).toEqual(expect.any(String));
    return read.headers.etag as string;
  }

  async function send(sample: SampleRequest): Promise<request.Response> {
    const { operation } = sample;
    const url = inStore(samplePath(sample));
    let call = request(h.app)[operation.method](url);
    if (operation.auth === 'bearer') call = authorized(call);
    if (operation.auth === 'client') call = call.set('Authorization', clientBasic);
    if (operation.requiresIdempotencyKey) call = call.set('Idempotency-Key', randomUUID());
    for (const [name, value] of Object.entries(sample.headers)) call = call.set(name, name === 'If-Match' ? await currentEtag(url, operation.path) : value);
    return sample.body === undefined ? call : call.send(sample.body as object);
  }

  /** An event in the delivery log of the subscription `id` names, to stand for the example's `{eventId}`. */
  async function loggedEventOf(path: string, id: string): Promise<string | undefined> {
    const log = await authorized(request(h.app).get(`${path.slice(0, path.indexOf('/{eventId}')).replace('{storeId}', storeId).replace('{id}', id)}?limit=1`));
    return (log.body as { data?: Array<{ event_id: string }> }).data?.[0]?.event_id;
  }

  it.each(inReadingOrder.map((sample) => [sample.operation.operationId, sample] as const))('%s answers a documented status', async (_, sample) => {
    const { operation } = sample;
    const ids = operation.path.includes('/{id}') && operation.auth === 'bearer' ? await candidateIds(operation.path) : [];
    const candidates = ids.length > 0 ? ids.map((id) => ({ ...sample, pathParameters: { ...sample.pathParameters, id } })) : [sample];
    const tries = operation.path.includes('{eventId}')
      ? await Promise.all(
          candidates.map(async (attempt) => {
            const eventId = await loggedEventOf(operation.path, attempt.pathParameters.id ?? '');
            return eventId === undefined ? attempt : { ...attempt, pathParameters: { ...attempt.pathParameters, eventId } };
          }),
        )
      : candidates;
    const statuses: number[] = [];
    let response: request.Response | undefined;
    for (const attempt of tries) {
      response = await send(attempt);
      statuses.push(response.status);
      if (response.status === operation.successStatus) break;
    }

    for (const status of statuses) expect(documentedStatuses(sample)).toContain(status);
    // A store operation run on the reader's own store and token, and a probe, do what they document;
    // an OAuth sample carries example codes and tokens that no server issued, and is refused in its
    // format, except at revocation and introspection, where an unknown token is a success (RFC 7009
    // §2.2: nothing to revoke; RFC 7662: `{"active": false}`).
    if (operation.auth === 'bearer' || !operation.path.startsWith('/oauth/')) expect(statuses).toContain(operation.successStatus);
    else if (UNKNOWN_TOKEN_SUCCEEDS.has(operation.operationId)) expect(statuses).toEqual([operation.successStatus]);
    else expect(response?.body.error).toEqual(expect.objectContaining({ code: expect.any(String) }));
  });
});
