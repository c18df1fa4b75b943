import { randomUUID } from 'node:crypto';
import { endStoreMigration, startStoreMigration } from '@svc/server/src/platform/stores';
import { seedProducts } from '@svc/server/test/support/catalog-products';
import { testDatabases } from '@svc/server/test/support/databases';
import { createTestStore, fullAccess, suiteHarness } from '@svc/server/test/support/harness';
import { type Listening, listen } from '@svc/server/test/support/listen';
import { createStoreClient, type RetryOptions } from '../src';
import { connectionReset, failureOf, recordingFetch, recordingSleep, serve } from './support';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each(testDatabases())('the client against a real server ($name)', (database) => {
  const h = suiteHarness(database);
  let server: Listening;
  let storeId: string;
  let accessToken: string;

  beforeAll(async () => {
    server = await serve(h);
    const store = await createTestStore(h);
    storeId = store.store.id;
    accessToken = (await fullAccess(h, store)).tokens.access_token;
  });

  const clientWith = (options: { fetch?: (request: Request) => Promise<Response>; retry?: RetryOptions; token?: string } = {}) =>
    createStoreClient({
      baseUrl: server.origin,
      accessToken: options.token ?? accessToken,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      retry: options.retry ?? { sleep: async () => {} },
    });

  const productNamed = (name: string) => h.db('products').where({ store_id: storeId, name });

  /** Runs `during` while the store is moving (503 STORE_MIGRATING); `endMove` ends it early, else it ends afterwards. */
  async function whileMoving(during: (endMove: () => Promise<void>) => Promise<void>): Promise<void> {
    await startStoreMigration(h.services, storeId);
    let moving = true;
    const endMove = async () => {
      if (moving) await endStoreMigration(h.services, storeId);
      moving = false;
    };
    try {
      await during(endMove);
    } finally {
      await endMove();
    }
  }

  it('sends the bearer token and answers typed data', async () => {
    const spy = recordingFetch();
    const { data, response } = await clientWith({ fetch: spy.fetch }).GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } });
    expect(data.data.store.id).toBe(storeId);
    expect(data.meta.request_id).toBe(response.headers.get('x-request-id'));
    expect(spy.sent.map((sent) => sent.headers.get('authorization'))).toEqual([`Bearer ${accessToken}`]);
  });

  describe('StoreApiError, from every failure', () => {
    it('a 404 carries its status, code and request id', async () => {
      const spy = recordingFetch(async (_sent, send) => {
        const response = await send();
        requestIdHeader = response.headers.get('x-request-id');
        return response;
      });
      let requestIdHeader: string | null = null;
      const error = await failureOf(() =>
        clientWith({ fetch: spy.fetch }).GET('/stores/{storeId}/v1/products/{id}', { params: { path: { storeId, id: '999999' } } }),
      );
      expect({ status: error.status, code: error.code, details: error.details }).toEqual({ status: 404, code: 'NOT_FOUND', details: [] });
      expect(error.requestId).toMatch(UUID);
      expect(error.requestId).toBe(requestIdHeader);
      expect(error).toBeInstanceOf(Error);
    });

    it('a 422 carries the error object the service sent', async () => {
      const error = await failureOf(() =>
        clientWith().POST('/stores/{storeId}/v1/products', {
          params: { path: { storeId } },
          body: { name: 'Unknown field', product_kind: 'physical', colour: 'red' } as never,
        }),
      );
      expect({ status: error.status, code: error.code }).toEqual({ status: 422, code: 'UNKNOWN_FIELD' });
      expect(error.error?.message).toContain('colour');
      expect(await productNamed('Unknown field')).toHaveLength(0);
    });

    it('a 400 carries the validation details', async () => {
      const error = await failureOf(() =>
        clientWith().POST('/stores/{storeId}/v1/products', { params: { path: { storeId } }, body: { name: '', product_kind: 'physical' } }),
      );
      expect({ status: error.status, code: error.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
      expect(error.details[0]).toMatchObject({ location: 'body', field: '/name' });
    });

    it('a refused token is a 401 UNAUTHENTICATED, not retried', async () => {
      const spy = recordingFetch();
      const error = await failureOf(() =>
        clientWith({ fetch: spy.fetch, token: 'svc_at_not-a-token' }).GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } }),
      );
      expect({ status: error.status, code: error.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
      expect(spy.sent).toHaveLength(1);
    });

    it('a connection that fails is NETWORK_ERROR with the cause, after the bounded retries of a safe request', async () => {
      const { waits, sleep } = recordingSleep();
      const spy = recordingFetch(async () => {
        throw connectionReset();
      });
      const error = await failureOf(() =>
        clientWith({ fetch: spy.fetch, retry: { maxRetries: 2, sleep } }).GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } }),
      );
      expect({ status: error.status, code: error.code, requestId: error.requestId }).toEqual({ status: 0, code: 'NETWORK_ERROR', requestId: undefined });
      expect(error.cause).toBeInstanceOf(TypeError);
      expect(spy.sent).toHaveLength(3);
      expect(waits).toHaveLength(2);
    });

    it('a service that is not listening is NETWORK_ERROR', async () => {
      const closed = await listen(h.app);
      await closed.close();
      const client = createStoreClient({ baseUrl: closed.origin, accessToken, retry: { maxRetries: 0 } });
      const error = await failureOf(() => client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } }));
      expect(error.code).toBe('NETWORK_ERROR');
    });

    it('an answer that is not the error format is UNEXPECTED_RESPONSE', async () => {
      const spy = recordingFetch(async () => new Response('<html>Bad gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } }));
      const error = await failureOf(() => clientWith({ fetch: spy.fetch }).GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } }));
      expect({ status: error.status, code: error.code }).toEqual({ status: 502, code: 'UNEXPECTED_RESPONSE' });
    });
  });

  describe('trace context', () => {
    const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = (span: string) => `00-${TRACE}-${span}-01`;

    it('sends the traceparent and tracestate the caller gives, asked for each request, and the service echoes X-Request-Id', async () => {
      const spy = recordingFetch();
      let span = 0;
      const client = createStoreClient({
        baseUrl: server.origin,
        accessToken,
        fetch: spy.fetch,
        traceContext: () => {
          span += 1;
          return { traceparent: parent(String(span).padStart(16, 'a')), tracestate: 'app=1' };
        },
      });
      const { response } = await client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } }, headers: { 'X-Request-Id': 'app-req-7' } });
      await client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } });
      expect(spy.sent.map((sent) => sent.headers.get('traceparent'))).toEqual([parent('aaaaaaaaaaaaaaa1'), parent('aaaaaaaaaaaaaaa2')]);
      expect(spy.sent[0]!.headers.get('tracestate')).toBe('app=1');
      expect(response.headers.get('x-request-id')).toBe('app-req-7');
    });

    it("lets one request's own traceparent win, and sends none when the source has none", async () => {
      const spy = recordingFetch();
      const client = createStoreClient({ baseUrl: server.origin, accessToken, fetch: spy.fetch, traceContext: () => undefined });
      await client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } });
      await client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } }, headers: { traceparent: parent('bbbbbbbbbbbbbbbb') } });
      expect(spy.sent.map((sent) => sent.headers.get('traceparent'))).toEqual([null, parent('bbbbbbbbbbbbbbbb')]);
    });
  });

  describe('Idempotency-Key and retries', () => {
    it('makes a key for an operation that takes one and sends none where none is taken', async () => {
      const spy = recordingFetch();
      const client = clientWith({ fetch: spy.fetch });
      await client.POST('/stores/{storeId}/v1/products', { params: { path: { storeId } }, body: { name: 'Keyed', product_kind: 'physical' } });
      await client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } });
      expect(spy.sent[0]!.headers.get('idempotency-key')).toMatch(UUID);
      expect(spy.sent[1]!.headers.has('idempotency-key')).toBe(false);
    });

    it('keeps the key the caller chose', async () => {
      const spy = recordingFetch();
      await clientWith({ fetch: spy.fetch }).POST('/stores/{storeId}/v1/products', {
        params: { path: { storeId }, header: { 'Idempotency-Key': 'chosen-by-the-app' } },
        body: { name: 'Chosen key', product_kind: 'physical' },
      });
      expect(spy.sent[0]!.headers.get('idempotency-key')).toBe('chosen-by-the-app');
    });

    it('a lost answer is sent again with the same key, and the product is created once', async () => {
      const spy = recordingFetch(async (_sent, send, index) => {
        const response = await send();
        if (index === 0) throw connectionReset();
        return response;
      });
      const { data, response } = await clientWith({ fetch: spy.fetch }).POST('/stores/{storeId}/v1/products', {
        params: { path: { storeId } },
        body: { name: 'Created once', product_kind: 'physical' },
      });
      expect(spy.sent).toHaveLength(2);
      expect(spy.sent[1]!.headers.get('idempotency-key')).toBe(spy.sent[0]!.headers.get('idempotency-key'));
      expect(response.headers.get('idempotent-replayed')).toBe('true');
      const rows = await productNamed('Created once');
      expect(rows.map((row) => Number(row.id))).toEqual([data.data.id]);
    });

    it('IDEMPOTENCY_KEY_IN_PROGRESS is retried with the same key', async () => {
      const spy = recordingFetch(async (_sent, send, index) =>
        index === 0
          ? Response.json(
              { error: { code: 'IDEMPOTENCY_KEY_IN_PROGRESS', message: 'A request with this key is still in progress.' }, meta: { request_id: randomUUID() } },
              { status: 409 },
            )
          : send(),
      );
      const { waits, sleep } = recordingSleep();
      await clientWith({ fetch: spy.fetch, retry: { sleep } }).POST('/stores/{storeId}/v1/products', {
        params: { path: { storeId } },
        body: { name: 'After in progress', product_kind: 'physical' },
      });
      expect(spy.sent).toHaveLength(2);
      expect(new Set(spy.sent.map((sent) => sent.headers.get('idempotency-key'))).size).toBe(1);
      expect(waits).toHaveLength(1);
      expect(await productNamed('After in progress')).toHaveLength(1);
    });

    it('a 503 while the store moves is retried after its Retry-After, with the same key', async () => {
      await whileMoving(async (endMove) => {
        const { waits, sleep } = recordingSleep(endMove);
        const spy = recordingFetch();
        const { response } = await clientWith({ fetch: spy.fetch, retry: { sleep } }).POST('/stores/{storeId}/v1/products', {
          params: { path: { storeId } },
          body: { name: 'After the move', product_kind: 'physical' },
        });
        expect(response.status).toBe(201);
        expect(waits).toEqual([30_000]);
        expect(spy.sent).toHaveLength(2);
        expect(spy.sent[1]!.headers.get('idempotency-key')).toBe(spy.sent[0]!.headers.get('idempotency-key'));
        expect(await productNamed('After the move')).toHaveLength(1);
      });
    });

    it('gives up after the bounded retries with the last answer', async () => {
      await whileMoving(async () => {
        const { waits, sleep } = recordingSleep();
        const error = await failureOf(() => clientWith({ retry: { sleep, maxRetries: 2 } }).GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } }));
        expect({ status: error.status, code: error.code }).toEqual({ status: 503, code: 'STORE_MIGRATING' });
        expect(waits).toEqual([30_000, 30_000]);
      });
    });

    it('does not wait longer than the policy allows: a Retry-After beyond it is thrown at once', async () => {
      await whileMoving(async () => {
        const { waits, sleep } = recordingSleep();
        const error = await failureOf(() =>
          clientWith({ retry: { sleep, maxDelayMs: 10_000 } }).GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } }),
        );
        expect(error.code).toBe('STORE_MIGRATING');
        expect(waits).toEqual([]);
      });
    });

    it('a 429 without Retry-After backs off exponentially, with jitter inside each step', async () => {
      const spy = recordingFetch(async () =>
        Response.json({ error: { code: 'RATE_LIMITED', message: 'Slow down.' }, meta: { request_id: randomUUID() } }, { status: 429 }),
      );
      const { waits, sleep } = recordingSleep();
      await failureOf(() =>
        clientWith({ fetch: spy.fetch, retry: { sleep, maxRetries: 3, baseDelayMs: 100, random: () => 0.5 } }).GET('/stores/{storeId}/v1/me', {
          params: { path: { storeId } },
        }),
      );
      expect(waits).toEqual([75, 150, 300]);
    });

    it('a POST that takes no key is not sent again after a lost answer', async () => {
      const spy = recordingFetch(async () => {
        throw connectionReset();
      });
      const error = await failureOf(() =>
        createStoreClient({ baseUrl: server.origin, fetch: spy.fetch, retry: { sleep: async () => {} } }).POST('/oauth/operations/status', {
          body: { operation_id: randomUUID() },
        }),
      );
      expect(error.code).toBe('NETWORK_ERROR');
      expect(spy.sent).toHaveLength(1);
    });
  });

  describe('paginate', () => {
    it('walks a 1,000-item list once: every id once, in order', async () => {
      const store = await createTestStore(h, 'Paged Perfumes');
      const token = (await fullAccess(h, store)).tokens.access_token;
      const ids = await seedProducts(
        h,
        store.store.id,
        Array.from({ length: 1000 }, () => ({})),
      );
      const spy = recordingFetch();
      const client = clientWith({ fetch: spy.fetch, token });
      const seen: number[] = [];
      for await (const product of client.paginate('/stores/{storeId}/v1/products', { params: { path: { storeId: store.store.id }, query: { limit: 100 } } })) {
        seen.push(product.id);
      }
      expect(seen).toEqual(ids);
      expect(spy.sent).toHaveLength(10);
      expect(spy.sent.slice(1).every((sent) => sent.path.endsWith('/products'))).toBe(true);
    });

    it('keeps the filters on every page and stops when the caller does', async () => {
      const store = await createTestStore(h, 'Filtered Perfumes');
      const token = (await fullAccess(h, store)).tokens.access_token;
      const ids = await seedProducts(
        h,
        store.store.id,
        Array.from({ length: 30 }, (_, index) => ({ status: index % 3 === 0 ? ('active' as const) : ('inactive' as const) })),
      );
      const spy = recordingFetch();
      const client = clientWith({ fetch: spy.fetch, token });
      const active: number[] = [];
      for await (const product of client.paginate('/stores/{storeId}/v1/products', {
        params: { path: { storeId: store.store.id }, query: { limit: 4, status: 'active' } },
      })) {
        expect(product.status).toBe('active');
        active.push(product.id);
      }
      expect(active).toEqual(ids.filter((_, index) => index % 3 === 0));
      expect(spy.sent.every((sent) => sent.headers !== undefined)).toBe(true);
      const firstTwo: number[] = [];
      for await (const product of client.paginate('/stores/{storeId}/v1/products', { params: { path: { storeId: store.store.id }, query: { limit: 2 } } })) {
        firstTwo.push(product.id);
        if (firstTwo.length === 2) break;
      }
      expect(firstTwo).toEqual(ids.slice(0, 2));
    });

    it('a page the service refuses ends the loop with a StoreApiError', async () => {
      const store = await createTestStore(h, 'Refused Perfumes');
      const token = (await fullAccess(h, store)).tokens.access_token;
      await seedProducts(
        h,
        store.store.id,
        Array.from({ length: 5 }, () => ({})),
      );
      const tamperedCursor = async (request: Request) => {
        const url = new URL(request.url);
        if (url.searchParams.has('cursor')) url.searchParams.set('cursor', `${url.searchParams.get('cursor')}x`);
        return fetch(new Request(url, request));
      };
      const client = clientWith({ token, fetch: tamperedCursor });
      const seen: number[] = [];
      const error = await failureOf(async () => {
        for await (const product of client.paginate('/stores/{storeId}/v1/products', { params: { path: { storeId: store.store.id }, query: { limit: 2 } } })) {
          seen.push(product.id);
        }
      });
      expect({ status: error.status, code: error.code }).toEqual({ status: 400, code: 'INVALID_CURSOR' });
      expect(seen).toHaveLength(2);
    });
  });

  describe('updateWithEtag', () => {
    const createProduct = async (name: string) =>
      (await clientWith().POST('/stores/{storeId}/v1/products', { params: { path: { storeId } }, body: { name, product_kind: 'physical' } })).data.data.id;

    it('reads again and writes again after a concurrent change (412), keeping both changes', async () => {
      const id = String(await createProduct('Oud before'));
      const client = clientWith();
      const read = () => client.GET('/stores/{storeId}/v1/products/{id}', { params: { path: { storeId, id } } });
      let writes = 0;
      const { data } = await client.updateWithEtag({
        read,
        write: async (current, etag) => {
          writes += 1;
          if (writes === 1) {
            // Another app instance changes the product between this read and this write.
            const { response } = await read();
            await client.PATCH('/stores/{storeId}/v1/products/{id}/content', {
              params: { path: { storeId, id }, header: { 'If-Match': response.headers.get('etag')! } },
              body: { description: 'Changed meanwhile' },
            });
          }
          return client.PATCH('/stores/{storeId}/v1/products/{id}/content', {
            params: { path: { storeId, id }, header: { 'If-Match': etag } },
            body: { name: `${current.data.name} and after` },
          });
        },
      });
      expect(writes).toBe(2);
      expect(data.data).toMatchObject({ name: 'Oud before and after', description: 'Changed meanwhile' });
    });

    it('throws the 412 with the current ETag once its attempts are spent', async () => {
      const id = String(await createProduct('Always contended'));
      const client = clientWith();
      const read = () => client.GET('/stores/{storeId}/v1/products/{id}', { params: { path: { storeId, id } } });
      let writes = 0;
      const error = await failureOf(() =>
        client.updateWithEtag({
          attempts: 2,
          read,
          write: async (_current, etag) => {
            writes += 1;
            const { response } = await read();
            await client.PATCH('/stores/{storeId}/v1/products/{id}/content', {
              params: { path: { storeId, id }, header: { 'If-Match': response.headers.get('etag')! } },
              body: { description: `Contender ${writes}` },
            });
            return client.PATCH('/stores/{storeId}/v1/products/{id}/content', {
              params: { path: { storeId, id }, header: { 'If-Match': etag } },
              body: { name: 'Never' },
            });
          },
        }),
      );
      expect(writes).toBe(2);
      expect({ status: error.status, code: error.code }).toEqual({ status: 412, code: 'PRECONDITION_FAILED' });
      expect(error.error?.current_etag).toMatch(/^"p1\.3\./);
    });

    it('does not retry other failures', async () => {
      const id = String(await createProduct('Refused write'));
      const client = clientWith();
      let writes = 0;
      const error = await failureOf(() =>
        client.updateWithEtag({
          read: () => client.GET('/stores/{storeId}/v1/products/{id}', { params: { path: { storeId, id } } }),
          write: (_current, etag) => {
            writes += 1;
            return client.PATCH('/stores/{storeId}/v1/products/{id}/content', {
              params: { path: { storeId, id }, header: { 'If-Match': etag } },
              body: { name: '' },
            });
          },
        }),
      );
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(writes).toBe(1);
    });
  });
});
