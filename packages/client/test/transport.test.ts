import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import packageJson from '../package.json';
import { createOAuthClient, createStoreClient, SDK_VERSION, StoreApiError } from '../src';
import { detectRuntime, userAgentHeader } from '../src/user-agent';
import { failureOf, recordingSleep } from './support';

/**
 * The transport against a local HTTP server that answers as scripted: hangs, stalls mid-body, or
 * answers 500/502/504/503/429. No database: these are the client's own rules.
 */

type Step = 'hang' | 'stall-body' | { status: number; retryAfter?: string; body?: unknown };

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

const STORE = 'st_1';
const okBody = { data: { id: 'p_1' }, meta: { request_id: 'req_ok' } };
const errorBody = (code: string) => ({ error: { code, message: `scripted ${code}` }, meta: { request_id: `req_${code}` } });

let server: http.Server;
let origin = '';
let script: Step[] = [];
let received: Received[] = [];
const hung = new Set<http.ServerResponse>();

beforeAll(async () => {
  server = http.createServer((request, response) => {
    request.resume();
    received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers });
    const step = script.shift() ?? { status: 200 };
    if (step === 'hang') {
      hung.add(response);
      return;
    }
    if (step === 'stall-body') {
      hung.add(response);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"data":');
      return;
    }
    const body = step.body ?? (step.status < 300 ? okBody : errorBody(step.status === 429 ? 'RATE_LIMITED' : 'INTERNAL_ERROR'));
    response.writeHead(step.status, { 'content-type': 'application/json', ...(step.retryAfter ? { 'retry-after': step.retryAfter } : {}) });
    response.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  script = [];
  received = [];
});

afterEach(() => {
  for (const response of hung) response.destroy();
  hung.clear();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A client with a short timeout, three retries and a sleep that returns at once (the waits are recorded). */
function scripted(steps: Step[], options: { timeoutMs?: number; maxRetries?: number } = {}) {
  script = steps;
  const sleep = recordingSleep();
  const client = createStoreClient({
    baseUrl: origin,
    accessToken: 'at_1',
    timeoutMs: options.timeoutMs ?? 300,
    retry: { sleep: sleep.sleep, random: () => 0, maxRetries: options.maxRetries ?? 3 },
  });
  return { client, waits: sleep.waits };
}

const getProduct = (client: ReturnType<typeof createStoreClient>, init: { signal?: AbortSignal } = {}) =>
  client.GET('/stores/{storeId}/v1/products/{id}', { params: { path: { storeId: STORE, id: 'p_1' } }, ...init });
const createProduct = (client: ReturnType<typeof createStoreClient>) =>
  client.POST('/stores/{storeId}/v1/products', { params: { path: { storeId: STORE } }, body: { name: 'Oud', price: '10.00' } as never });
/** A POST whose operation takes no Idempotency-Key: a repeat could do its work twice. */
const postWithoutKey = (client: ReturnType<typeof createStoreClient>) => client.POST('/oauth/operations/status', { body: { operation_id: randomUUID() } });

describe('the timeout', () => {
  it('aborts a GET to a server that never answers with TIMEOUT, after its bounded retries', async () => {
    const { client, waits } = scripted(['hang', 'hang', 'hang'], { maxRetries: 2 });
    const error = await failureOf(() => getProduct(client));
    expect(error).toMatchObject({ code: 'TIMEOUT', status: 0, requestId: undefined });
    expect(error.message).toBe('The request did not complete within 300 ms.');
    expect(received).toHaveLength(3);
    expect(waits).toHaveLength(2);
  });

  it('a GET that timed out once is answered by its retry', async () => {
    const { client } = scripted(['hang', { status: 200 }]);
    const { data } = await getProduct(client);
    expect(data).toEqual(okBody);
    expect(received).toHaveLength(2);
  });

  it('retries a POST that carries an Idempotency-Key with the same key', async () => {
    const { client } = scripted(['hang', { status: 201 }]);
    await createProduct(client);
    expect(received.map((r) => r.method)).toEqual(['POST', 'POST']);
    const keys = received.map((r) => r.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
  });

  it('never repeats a POST without a key: one attempt, TIMEOUT thrown', async () => {
    const { client, waits } = scripted(['hang', { status: 200 }]);
    const error = await failureOf(() => postWithoutKey(client));
    expect(error.code).toBe('TIMEOUT');
    expect(received).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('also cuts an answer whose body stalls after its headers', async () => {
    const { client } = scripted(['stall-body'], { maxRetries: 0 });
    const error = await failureOf(() => getProduct(client));
    expect(error.code).toBe('TIMEOUT');
  });

  it('a GET whose body stalled is answered by its retry, as one that never answered is', async () => {
    const { client, waits } = scripted(['stall-body', { status: 200 }]);
    const { data } = await getProduct(client);
    expect(data).toEqual(okBody);
    expect(received).toHaveLength(2);
    expect(waits).toHaveLength(1);
  });

  it('never repeats a POST without a key whose body stalled: one attempt, TIMEOUT thrown', async () => {
    const { client, waits } = scripted(['stall-body', { status: 200 }]);
    const error = await failureOf(() => postWithoutKey(client));
    expect(error.code).toBe('TIMEOUT');
    expect(received).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('0 turns it off: the caller’s own signal still aborts, and is never retried', async () => {
    const { client, waits } = scripted(['hang', 'hang'], { timeoutMs: 0 });
    const controller = new AbortController();
    const call = getProduct(client, { signal: controller.signal });
    await new Promise<void>((resolve) => server.once('request', () => setImmediate(resolve)));
    controller.abort(new Error('the user left the page'));
    await expect(call).rejects.toThrow('the user left the page');
    expect(received).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('holds for a fetch that ignores its signal', async () => {
    let calls = 0;
    const deaf = (_request: Request) => {
      calls += 1;
      return new Promise<Response>(() => {});
    };
    const client = createStoreClient({ baseUrl: origin, fetch: deaf, timeoutMs: 50, retry: { maxRetries: 1, sleep: async () => {} } });
    expect((await failureOf(() => getProduct(client))).code).toBe('TIMEOUT');
    expect(calls).toBe(2);
  });

  it('is a lost answer to the token manager, like a failed connection', () => {
    expect(StoreApiError.timeout(10).lostResponse).toBe(true);
    expect(StoreApiError.network(new Error('reset')).lostResponse).toBe(true);
    expect(new StoreApiError({ status: 404, code: 'NOT_FOUND', message: 'x' }).lostResponse).toBe(false);
  });

  it('an already aborted signal sends nothing', async () => {
    const { client } = scripted([]);
    await expect(getProduct(client, { signal: AbortSignal.abort(new Error('gone')) })).rejects.toThrow('gone');
    expect(received).toHaveLength(0);
  });
});

describe('retries of 500, 502 and 504', () => {
  it.each([500, 502, 504])('a GET answered %i is retried with backoff, then answered', async (status) => {
    const { client, waits } = scripted([{ status }, { status }, { status: 200 }]);
    const { data } = await getProduct(client);
    expect(data).toEqual(okBody);
    expect(received).toHaveLength(3);
    expect(waits).toEqual([250, 500]);
  });

  it.each([500, 502, 504])('a POST with an Idempotency-Key answered %i is retried with the same key', async (status) => {
    const { client } = scripted([{ status }, { status: 201 }]);
    await createProduct(client);
    expect(new Set(received.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(received).toHaveLength(2);
  });

  it.each([500, 502, 504])('a POST without a key answered %i is not retried: the error is thrown', async (status) => {
    const { client } = scripted([{ status }, { status: 200 }]);
    const error = await failureOf(() => postWithoutKey(client));
    expect(error).toMatchObject({ status, code: 'INTERNAL_ERROR', requestId: 'req_INTERNAL_ERROR' });
    expect(received).toHaveLength(1);
  });

  it('gives up after maxRetries with the last answer', async () => {
    const { client } = scripted([{ status: 502 }, { status: 502 }, { status: 504 }], { maxRetries: 2 });
    const error = await failureOf(() => getProduct(client));
    expect(error.status).toBe(504);
    expect(received).toHaveLength(3);
  });

  it('other 5xx (501) are not retried', async () => {
    const { client } = scripted([{ status: 501 }, { status: 200 }]);
    expect((await failureOf(() => getProduct(client))).status).toBe(501);
    expect(received).toHaveLength(1);
  });
});

describe('503 and 429: the service asks to come back later', () => {
  it.each([503, 429])('%i is retried after its Retry-After, even for a POST without a key (nothing was done)', async (status) => {
    const { client, waits } = scripted([{ status, retryAfter: '2' }, { status: 200 }]);
    await postWithoutKey(client);
    expect(received).toHaveLength(2);
    expect(waits).toEqual([2000]);
  });

  it('a 429 without Retry-After backs off exponentially', async () => {
    const { client, waits } = scripted([{ status: 429 }, { status: 429 }, { status: 429 }, { status: 200 }]);
    await getProduct(client);
    expect(waits).toEqual([250, 500, 1000]);
  });

  it('maxRetries 0 turns retrying off', async () => {
    const { client } = scripted([{ status: 503 }, { status: 200 }], { maxRetries: 0 });
    expect((await failureOf(() => getProduct(client))).status).toBe(503);
    expect(received).toHaveLength(1);
  });
});

describe('User-Agent', () => {
  it('names the app, the SDK and its version, and Node with its version', async () => {
    script = [{ status: 200 }];
    const client = createStoreClient({ baseUrl: origin, appInfo: { name: 'StockSync', version: '2.1.0', url: 'https://stocksync.example' } });
    await getProduct(client);
    expect(received[0]?.headers['user-agent']).toBe(`StockSync/2.1.0 (https://stocksync.example) svc-sdk/${SDK_VERSION} node/${process.versions.node}`);
    expect(received[0]?.headers['x-client-user-agent']).toBeUndefined();
  });

  it('without appInfo names the SDK and the runtime; the OAuth client sends it too', async () => {
    script = [{ status: 200, body: { operation_id: 'op_1', status: 'completed' } }];
    const oauth = createOAuthClient({ baseUrl: origin, clientId: 'app_1', clientSecret: 'secret' });
    await oauth.status('op_1').catch(() => {});
    expect(received[0]?.headers['user-agent']).toBe(`svc-sdk/${SDK_VERSION} node/${process.versions.node}`);
  });

  it("keeps a request's own User-Agent", async () => {
    script = [{ status: 200 }];
    const client = createStoreClient({ baseUrl: origin });
    await client.GET('/stores/{storeId}/v1/products/{id}', { params: { path: { storeId: STORE, id: 'p_1' } }, headers: { 'User-Agent': 'mine/1' } });
    expect(received[0]?.headers['user-agent']).toBe('mine/1');
  });

  it('is X-Client-User-Agent in a browser or a browser worker, where a page cannot set User-Agent', () => {
    expect(userAgentHeader({ name: 'Shop' }, detectRuntime({ document: {}, navigator: { userAgent: 'Mozilla/5.0' } }))).toEqual([
      'X-Client-User-Agent',
      `Shop svc-sdk/${SDK_VERSION} browser`,
    ]);
    expect(detectRuntime({ WorkerGlobalScope: class {} })).toEqual({ token: 'browser', browser: true });
  });

  it('names the other server and edge runtimes', () => {
    expect(detectRuntime({ Deno: { version: { deno: '2.1.4' } } })).toEqual({ token: 'deno/2.1.4', browser: false });
    expect(detectRuntime({ process: { versions: { node: '22.0.0', bun: '1.1.0' } } })).toEqual({ token: 'bun/1.1.0', browser: false });
    expect(detectRuntime({ navigator: { userAgent: 'Cloudflare-Workers' } })).toEqual({ token: 'workerd', browser: false });
    expect(detectRuntime({ EdgeRuntime: 'edge-runtime' })).toEqual({ token: 'vercel-edge', browser: false });
    expect(detectRuntime({})).toEqual({ token: 'unknown', browser: false });
  });

  it("is the package's version", () => {
    expect(SDK_VERSION).toBe(packageJson.version);
  });
});
