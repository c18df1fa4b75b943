import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testDatabases } from '@svc/server/test/support/databases';
import { createTestStore, fullAccess, type Harness, openHarness } from '@svc/server/test/support/harness';
import { createStoreClient } from '../src';

const [sqlite] = testDatabases();
let h: Harness;
let server: Server;
let baseUrl: string;
let storeId: string;
let accessToken: string;

beforeAll(async () => {
  h = await openHarness(sqlite!);
  const store = await createTestStore(h);
  storeId = store.store.id;
  accessToken = (await fullAccess(h, store)).tokens.access_token;
  server = h.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await sqlite!.close();
});

describe('the typed client against the server', () => {
  it('sends the bearer token and gets typed data', async () => {
    const seen: string[] = [];
    const client = createStoreClient({
      baseUrl,
      accessToken: async () => accessToken,
      fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
        const outgoing = new Request(input, init);
        seen.push(outgoing.headers.get('authorization') ?? '');
        return fetch(outgoing);
      },
    });
    const { data, error, response } = await client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } });
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(data?.data.store.id).toBe(storeId);
    expect(data?.meta.request_id).toBe(response.headers.get('x-request-id'));
    expect(seen).toEqual([`Bearer ${accessToken}`]);
  });

  it('surfaces the error format', async () => {
    const client = createStoreClient({ baseUrl, accessToken: async () => 'svc_at_not-a-token' });
    const { data, error, response } = await client.GET('/stores/{storeId}/v1/products', {
      params: { path: { storeId }, query: { limit: 10, status: 'active' } },
    });
    expect(data).toBeUndefined();
    expect(response.status).toBe(401);
    expect(error?.error.code).toBe('UNAUTHENTICATED');
    expect(error?.meta.request_id).toBe(response.headers.get('x-request-id'));
  });

  it('gets validation errors back typed', async () => {
    const client = createStoreClient({ baseUrl });
    const { error, response } = await client.POST('/stores/{storeId}/v1/products', {
      params: { path: { storeId }, header: { 'Idempotency-Key': 'key-1' } },
      body: { name: '', product_kind: 'physical' },
    });
    expect(response.status).toBe(400);
    expect(error?.error.code).toBe('VALIDATION_FAILED');
    expect(error?.error.details?.[0]).toMatchObject({ location: 'body', field: '/name' });
  });
});
