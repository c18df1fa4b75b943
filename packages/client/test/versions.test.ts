import { apiVersionRegistry } from '@svc/server/src/core/api-versions';
import { testDatabases } from '@svc/server/test/support/databases';
import {
  approveAndGetCode,
  createTestApp,
  createTestStore,
  installWithTokens,
  REDIRECT_URI,
  type StoreFixture,
  suiteHarness,
} from '@svc/server/test/support/harness';
import type { Listening } from '@svc/server/test/support/listen';
import { API_VERSION_HEADER, CURRENT_API_VERSION, createOAuthClient, createPkcePair, createStoreClient, StoreApiError } from '../src';
import { recordingFetch, serve } from './support';

/** The server answers by a registry with a deprecated version besides the current one. */
const REGISTRY = apiVersionRegistry([
  { version: '2025-04-01', released: '2025-04-01', deprecated: '2026-10-15', sunset: '2027-10-15', changelog: '2025-04-01' },
  { version: '2026-10-15', released: '2026-10-15', deprecated: null, sunset: null, changelog: '2026-10-15' },
]);

describe.each(testDatabases())('the SDK and date versions ($name)', (database) => {
  const h = suiteHarness(database, { apiVersions: REGISTRY });
  let server: Listening;
  let store: StoreFixture;
  let accessToken: string;

  beforeAll(async () => {
    server = await serve(h);
    store = await createTestStore(h);
    const client = await createTestApp(h, { required: ['products:read'], optional: [] });
    accessToken = (await installWithTokens(h, store, client, ['products:read'])).access_token;
  });

  const me = (apiVersion?: string) => {
    const recording = recordingFetch();
    const client = createStoreClient({ baseUrl: server.origin, accessToken, fetch: recording.fetch, ...(apiVersion === undefined ? {} : { apiVersion }) });
    return { recording, answer: client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId: store.store.id } } }) };
  };

  it('names the header and the version its types follow', () => {
    expect(API_VERSION_HEADER).toBe('API-Version');
    expect(CURRENT_API_VERSION).toBe('2026-10-15');
  });

  it('sends apiVersion as the API-Version header on every request, and the answer names the version that served it', async () => {
    const { recording, answer } = me('2025-04-01');
    const { response } = await answer;
    expect(recording.sent.map((sent) => sent.headers.get('API-Version'))).toEqual(['2025-04-01']);
    expect(response.headers.get('API-Version')).toBe('2025-04-01');
    expect(response.headers.get('Deprecation')).toBe('@1792022400');
    expect(response.headers.get('Sunset')).toBe('Fri, 15 Oct 2027 00:00:00 GMT');
  });

  it("lets one request name another version in its own params (the spec's API-Version parameter)", async () => {
    const recording = recordingFetch();
    const client = createStoreClient({ baseUrl: server.origin, accessToken, fetch: recording.fetch, apiVersion: '2025-04-01' });
    const { response } = await client.GET('/stores/{storeId}/v1/me', {
      params: { path: { storeId: store.store.id }, header: { 'API-Version': '2026-10-15' } },
    });
    expect(recording.sent[0]?.headers.get('API-Version')).toBe('2026-10-15');
    expect(response.headers.get('API-Version')).toBe('2026-10-15');
  });

  it('sends no header without apiVersion: the app’s pin answers', async () => {
    const { recording, answer } = me();
    const { response } = await answer;
    expect(recording.sent[0]?.headers.has('API-Version')).toBe(false);
    expect(response.headers.get('API-Version')).toBe('2026-10-15');
    expect(response.headers.get('Deprecation')).toBeNull();
  });

  it('throws UNSUPPORTED_VERSION, with the versions accepted, for a version the service does not serve', async () => {
    const failure = await me('2020-01-01').answer.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreApiError);
    expect(failure).toMatchObject({ status: 400, code: 'UNSUPPORTED_VERSION' });
    expect((failure as StoreApiError).details.map((detail) => detail.message)).toEqual([
      '2025-04-01 (deprecated, sunset on 2027-10-15)',
      '2026-10-15 (the current version)',
    ]);
  });

  it('sends it from the OAuth client too', async () => {
    const client = await createTestApp(h, { required: ['products:read'], optional: [] });
    const pkce = await createPkcePair();
    const code = await approveAndGetCode(h, store, client, ['products:read'], pkce.challenge);
    const recording = recordingFetch();
    const oauth = createOAuthClient({
      baseUrl: server.origin,
      clientId: client.app.id,
      clientSecret: client.clientSecret,
      fetch: recording.fetch,
      apiVersion: '2025-04-01',
    });
    await oauth.exchangeCode({ code, redirectUri: REDIRECT_URI, codeVerifier: pkce.verifier });
    expect(recording.sent.map((sent) => sent.headers.get('API-Version'))).toEqual(['2025-04-01']);
  });
});
