import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '@svc/server/src/app';
import { createStoreClient } from '../src';

const STORE_ID = '5c9f1e2d-3b4a-4c6d-8e7f-9a0b1c2d3e4f';
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createApp({ config: { validateResponses: true, exposeInternalErrors: true } }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('the typed client against the server', () => {
  it('sends the bearer token and surfaces the error format', async () => {
    const seen: string[] = [];
    const client = createStoreClient({
      baseUrl,
      accessToken: async () => 'svc_at_example',
      fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
        const outgoing = new Request(input, init);
        seen.push(outgoing.headers.get('authorization') ?? '');
        return fetch(outgoing);
      },
    });
    const { data, error, response } = await client.GET('/stores/{storeId}/v1/products', {
      params: { path: { storeId: STORE_ID }, query: { limit: 10, status: 'active' } },
    });
    expect(data).toBeUndefined();
    expect(response.status).toBe(501);
    expect(error?.error.code).toBe('NOT_IMPLEMENTED');
    expect(error?.meta.request_id).toBe(response.headers.get('x-request-id'));
    expect(seen).toEqual(['Bearer svc_at_example']);
  });

  it('gets validation errors back typed', async () => {
    const client = createStoreClient({ baseUrl });
    const { error, response } = await client.POST('/stores/{storeId}/v1/products', {
      params: { path: { storeId: STORE_ID }, header: { 'Idempotency-Key': 'key-1' } },
      body: { name: '', product_kind: 'physical' },
    });
    expect(response.status).toBe(400);
    expect(error?.error.code).toBe('VALIDATION_FAILED');
    expect(error?.error.details?.[0]).toMatchObject({ location: 'body', field: '/name' });
  });
});
