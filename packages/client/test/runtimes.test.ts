import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import vm from 'node:vm';
import { CURRENT_API_VERSION } from '@svc/contract';
import { createApp } from '@svc/server/src/app';
import { testDatabases } from '@svc/server/test/support/databases';
import { createTestStore, fullAccess, suiteHarness } from '@svc/server/test/support/harness';
import { type Listening, listen } from '@svc/server/test/support/listen';
import { chromiumPath, describeInChromium } from '@svc/server/test/support/requirements';
import { build, type Metafile } from 'esbuild';
import { type Browser, chromium } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { SDK_VERSION } from '../src';

/**
 * The SDK as other runtimes get it: bundled with esbuild for the browser and for a neutral platform
 * (no Node built-ins assumed), then run where Node's fetch is not: the browser bundle in Chromium,
 * from a page on another origin, through the service's CORS; the neutral bundle in a `node:vm`
 * context that has no Node globals and a fetch written on `node:http`.
 */

const clientDir = path.resolve(__dirname, '..');
const BUNDLE_NAME = 'SvcSdk';
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

interface Bundle {
  code: string;
  inputs: string[];
}

/** esbuild's bundle of `source` (which imports `@svc/client`), minified, as a consumer's bundler makes it. */
async function bundle(source: string, platform: 'browser' | 'neutral', format: 'iife' | 'esm' = 'iife'): Promise<Bundle> {
  const result = await build({
    stdin: { contents: source, resolveDir: clientDir, loader: 'ts' },
    alias: { '@svc/client': clientDir },
    bundle: true,
    write: false,
    minify: true,
    platform,
    format,
    ...(format === 'iife' ? { globalName: BUNDLE_NAME } : {}),
    // A neutral build names no main fields of its own; these are what a bundler for an edge runtime uses.
    ...(platform === 'neutral' ? { mainFields: ['module', 'main'] } : {}),
    target: 'es2022',
    metafile: true,
    logLevel: 'silent',
  });
  // The inputs with bytes in the output: a module parsed and then dropped by tree shaking is not in the bundle.
  const [output] = Object.values((result.metafile as Metafile).outputs);
  const inputs = Object.entries(output?.inputs ?? {}).filter(([, { bytesInOutput }]) => bytesInOutput > 0);
  return { code: result.outputFiles[0]?.text ?? '', inputs: inputs.map(([input]) => input) };
}

const WHOLE_SDK = "export * from '@svc/client';";

describe('bundling the SDK', () => {
  it.each(['browser', 'neutral'] as const)('for the %s platform needs no node: module and no Node built-in', async (platform) => {
    const { code, inputs } = await bundle(WHOLE_SDK, platform);
    expect(inputs.filter((input) => input !== '<stdin>' && (input.startsWith('node:') || !/\.(ts|js|mjs|cjs|json)$/.test(input)))).toEqual([]);
    expect(inputs.some((input) => input.includes('contract/src/node.ts'))).toBe(false);
    expect(code).not.toMatch(/require\(["']/);
  });

  it('of verifyWebhook alone leaves the operation table and the client out (sideEffects: false, routes built lazily)', async () => {
    const verifier = await bundle("import { verifyWebhook } from '@svc/client'; export { verifyWebhook };", 'browser', 'esm');
    const whole = await bundle(WHOLE_SDK, 'browser', 'esm');
    const sizes = { verifier: verifier.code.length, whole: whole.code.length };
    console.log(`esbuild --minify, browser: verifyWebhook alone ${sizes.verifier} bytes, the whole SDK ${sizes.whole} bytes`);
    expect(sizes.verifier * 3).toBeLessThan(sizes.whole);
    expect(whole.code).toContain('products.create');
    for (const left of ['products.create', '/stores/{storeId}/v1/products', 'openapi-fetch', 'Idempotency-Key']) expect(verifier.code).not.toContain(left);
    expect(verifier.inputs.filter((input) => /operations\.ts|openapi-fetch|src\/client\.ts/.test(input))).toEqual([]);
  });
});

/** A signed delivery as the service sends one, fresh by this machine's clock. */
function signedDelivery() {
  const body = JSON.stringify({ id: 'evt_1', type: 'product.created', created_at: new Date().toISOString(), data: { product: { id: 'p_1' } } });
  const id = 'msg_runtime_1';
  const timestamp = new Date();
  const signature = new Webhook(SECRET).sign(id, timestamp, body);
  return { body, headers: { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)), 'webhook-signature': signature } };
}

/** What the bundle runs, in the browser and in the vm alike: the SDK's calls against the real service. */
const SCENARIO = `async ({ baseUrl, storeId, accessToken, apiVersion, delivery, secret }) => {
  const { createStoreClient, verifyWebhook, StoreApiError } = ${BUNDLE_NAME};
  const client = createStoreClient({ baseUrl, accessToken, apiVersion, appInfo: { name: 'RuntimeCheck', version: '1.0' } });
  const me = await client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } });
  const created = await client.POST('/stores/{storeId}/v1/products', { params: { path: { storeId } }, body: { name: 'Bundled oud', product_kind: 'physical' } });
  const names = [];
  for await (const product of client.paginate('/stores/{storeId}/v1/products', { params: { path: { storeId }, query: { limit: 1 } } })) names.push(product.name);
  let missing = '';
  try {
    await client.GET('/stores/{storeId}/v1/products/{id}', { params: { path: { storeId, id: '999999' } } });
  } catch (error) {
    missing = (error instanceof StoreApiError) + ' ' + error.status + ' ' + error.code;
  }
  const event = verifyWebhook(secret, delivery.body, delivery.headers);
  return { store: me.data.data.store.id, servedBy: me.response.headers.get('API-Version'), createdStatus: created.response.status, names, missing, eventType: event.type };
}`;

describe.each(testDatabases())('the bundled SDK in other runtimes ($name)', (database) => {
  const h = suiteHarness(database);
  /** The headers of every request that reached the service. */
  const seen: http.IncomingHttpHeaders[] = [];
  let page: Listening;
  let service: Listening;
  let storeId = '';
  let accessToken = '';
  let browserBundle = '';
  let neutralBundle = '';

  beforeAll(async () => {
    [browserBundle, neutralBundle] = (await Promise.all([bundle(WHOLE_SDK, 'browser'), bundle(WHOLE_SDK, 'neutral')])).map((built) => built.code) as [
      string,
      string,
    ];
    // The page's origin (another port) is the one origin the service lets call its store API.
    page = await listen((request, response) => {
      if (request.url === '/sdk.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(browserBundle);
      else response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title><script src="/sdk.js"></script>');
    });
    h.atEnd(() => page.close());
    const app = createApp({ config: { validateResponses: true, exposeInternalErrors: true, corsOrigins: [page.origin] }, services: h.services });
    service = await listen((request, response) => {
      seen.push(request.headers);
      app(request, response);
    });
    h.atEnd(() => service.close());
    const store = await createTestStore(h, 'Bundled Perfumes');
    storeId = store.store.id;
    accessToken = (await fullAccess(h, store)).tokens.access_token;
  });

  beforeEach(() => {
    seen.length = 0;
  });

  const scenarioInput = () => ({ baseUrl: service.origin, storeId, accessToken, apiVersion: CURRENT_API_VERSION, delivery: signedDelivery(), secret: SECRET });
  const expectedAnswer = () => ({
    store: storeId,
    servedBy: CURRENT_API_VERSION,
    createdStatus: 201,
    names: ['Bundled oud'],
    missing: 'true 404 NOT_FOUND',
    eventType: 'product.created',
  });

  describeInChromium('the browser bundle in Chromium', () => {
    let browser: Browser;

    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
      h.atEnd(() => browser.close());
    });

    it("calls the service cross-origin with the browser's fetch, sends X-Client-User-Agent and API-Version, verifies a webhook", async () => {
      const tab = await browser.newPage();
      await tab.goto(`${page.origin}/`);
      const answer = await tab.evaluate(`(${SCENARIO})(${JSON.stringify(scenarioInput())})`);
      await tab.close();
      expect(answer).toEqual(expectedAnswer());
      const calls = seen.filter((headers) => headers.authorization !== undefined);
      expect(calls.length).toBeGreaterThanOrEqual(4);
      for (const headers of calls) {
        expect(headers['x-client-user-agent']).toBe(`RuntimeCheck/1.0 svc-sdk/${SDK_VERSION} browser`);
        expect(headers['user-agent']).toMatch(/Chrome/);
        expect(headers['api-version']).toBe(CURRENT_API_VERSION);
        expect(headers.origin).toBe(page.origin);
      }
      // The browser asked first, and the service's CORS let the SDK's headers through.
      const preflights = seen.filter((headers) => headers['access-control-request-method'] !== undefined);
      expect(preflights.length).toBeGreaterThan(0);
      expect(preflights.map((headers) => headers['access-control-request-headers']).join(',')).toContain('x-client-user-agent');
    });
  });

  it('the neutral bundle runs in a vm context without Node globals, under a fetch written on node:http', async () => {
    let httpCalls = 0;
    const httpFetch = (request: Request): Promise<Response> =>
      new Promise((resolve, reject) => {
        httpCalls += 1;
        const url = new URL(request.url);
        const sent: Record<string, string> = {};
        request.headers.forEach((value, name) => {
          sent[name] = value;
        });
        const outgoing = http.request(url, { method: request.method, headers: sent, signal: request.signal }, (incoming) => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) if (typeof value === 'string') headers.set(name, value);
          const bodyless = incoming.statusCode === 204 || incoming.statusCode === 304 || request.method === 'HEAD';
          resolve(new Response(bodyless ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>), { status: incoming.statusCode ?? 0, headers }));
        });
        outgoing.on('error', reject);
        request
          .arrayBuffer()
          .then((body) => outgoing.end(Buffer.from(body)))
          .catch(reject);
      });
    // Web APIs only: no process, require, Buffer or Node fetch.
    const webApis = [
      'URL',
      'URLSearchParams',
      'Headers',
      'Request',
      'Response',
      'FormData',
      'Blob',
      'TextEncoder',
      'TextDecoder',
      'AbortController',
      'AbortSignal',
      'ReadableStream',
      'TransformStream',
      'WritableStream',
      'DOMException',
      'setTimeout',
      'clearTimeout',
      'queueMicrotask',
      'crypto',
      'btoa',
      'atob',
      'console',
    ] as const;
    const context = vm.createContext({ ...Object.fromEntries(webApis.map((name) => [name, globalThis[name]])), fetch: httpFetch });
    vm.runInContext(neutralBundle, context);
    expect(vm.runInContext('typeof process + typeof require + typeof Buffer', context)).toBe('undefinedundefinedundefined');
    const scenario = vm.runInContext(`(${SCENARIO})`, context) as (input: unknown) => Promise<unknown>;
    const answer = JSON.parse(JSON.stringify(await scenario(scenarioInput())));
    expect({ ...answer, names: answer.names.slice(-1) }).toEqual({ ...expectedAnswer(), names: ['Bundled oud'] });
    expect(httpCalls).toBeGreaterThanOrEqual(4);
    const calls = seen.filter((headers) => headers.authorization !== undefined);
    expect(calls.length).toBe(httpCalls);
    for (const headers of calls) expect(headers['user-agent']).toBe(`RuntimeCheck/1.0 svc-sdk/${SDK_VERSION} unknown`);
  });
});
