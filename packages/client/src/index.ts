import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/schema';

export * from './generated/schema';

export type StoreClient = Client<paths>;

export interface StoreClientOptions {
  /** Scheme, host and port of the service, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** The access token, or a function that returns a current one (called for every request). */
  accessToken?: string | (() => string | Promise<string>);
  fetch?: typeof fetch;
}

/** A typed client for every path of the spec: requests, responses and errors are checked by `tsc`. */
export function createStoreClient({ baseUrl, accessToken, fetch: fetchImpl }: StoreClientOptions): StoreClient {
  const client = createClient<paths>({ baseUrl, ...(fetchImpl ? { fetch: fetchImpl } : {}) });
  if (accessToken !== undefined) {
    client.use({
      async onRequest({ request }) {
        const token = typeof accessToken === 'function' ? await accessToken() : accessToken;
        request.headers.set('Authorization', `Bearer ${token}`);
        return request;
      },
    });
  }
  return client;
}
