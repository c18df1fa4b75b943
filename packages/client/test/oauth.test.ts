import { createHash } from 'node:crypto';
import { testDatabases } from '@svc/server/test/support/databases';
import { approveAndGetCode, createTestApp, createTestStore, REDIRECT_URI, type StoreFixture, suiteHarness } from '@svc/server/test/support/harness';
import type { Listening } from '@svc/server/test/support/listen';
import {
  authorizeUrl,
  createOAuthClient,
  createPkcePair,
  createState,
  createStoreClient,
  createTokenManager,
  type OAuthClient,
  ReauthorizationRequiredError,
  type StoredTokens,
  storedTokens,
  type TokenManager,
} from '../src';
import { connectionReset, failureOf, recordingFetch, type SentRequest, serve } from './support';

/** The app's token storage for one installation, shared by every process of the app that is given it. */
function memoryStorage() {
  const saved: StoredTokens[] = [];
  const events: string[] = [];
  return {
    saved,
    events,
    load: async () => saved.at(-1),
    save: async (tokens: StoredTokens) => {
      events.push(`saved ${tokens.access_token}`);
      saved.push(tokens);
    },
  };
}

const oauthPaths = (sent: SentRequest[]) => sent.map((request) => request.path);

describe.each(testDatabases())('OAuth helpers and the token manager against a real server ($name)', (database) => {
  const h = suiteHarness(database);
  let server: Listening;
  let store: StoreFixture;

  beforeAll(async () => {
    server = await serve(h);
    store = await createTestStore(h);
  });

  /** An app installed in the store through the helpers: PKCE pair, the owner's consent, the code exchanged. */
  async function installedApp(options: { fetch?: (request: Request) => Promise<Response> } = {}) {
    const app = await createTestApp(h, { required: ['products:read'], optional: [] });
    const pkce = await createPkcePair();
    const code = await approveAndGetCode(h, store, app, ['products:read'], pkce.challenge);
    const oauth = createOAuthClient({
      baseUrl: server.origin,
      clientId: app.app.id,
      clientSecret: app.clientSecret,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    const first = await oauth.exchangeCode({ code, redirectUri: REDIRECT_URI, codeVerifier: pkce.verifier });
    return { app, oauth, first: storedTokens(first, h.clock.now()) };
  }

  const managerOver = (oauth: OAuthClient, storage: ReturnType<typeof memoryStorage>, now = () => h.clock.now()) =>
    createTokenManager({ oauth, load: storage.load, save: storage.save, now });

  const storeClient = (tokens: TokenManager | string, fetchImpl?: (request: Request) => Promise<Response>) =>
    createStoreClient({ baseUrl: server.origin, accessToken: tokens, ...(fetchImpl ? { fetch: fetchImpl } : {}) });

  const me = (tokens: TokenManager | string) => storeClient(tokens).GET('/stores/{storeId}/v1/me', { params: { path: { storeId: store.store.id } } });

  const operationState = async (operationId: string) => (await h.db('token_operations').where({ id: operationId }).first()).state as string;

  describe('PKCE and the authorize URL', () => {
    it('makes a 43-character verifier and its S256 challenge, fresh every time', async () => {
      const [one, two] = [await createPkcePair(), await createPkcePair()];
      expect(one.verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(one.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(one.method).toBe('S256');
      expect(one.verifier).not.toBe(two.verifier);
      expect(one.challenge).toBe(createHash('sha256').update(one.verifier).digest('base64url'));
    });

    it('builds an authorize URL the server takes: every check passes and the browser is sent to sign in', async () => {
      const app = await createTestApp(h, { required: ['products:read'], optional: ['orders:read'] });
      const url = authorizeUrl({
        baseUrl: server.origin,
        clientId: app.app.id,
        storeId: store.store.id,
        redirectUri: REDIRECT_URI,
        state: createState(),
        scopes: ['products:read', 'orders:read'],
        codeChallenge: (await createPkcePair()).challenge,
        versionId: app.version.id,
      });
      const query = new URL(url).searchParams;
      expect(Object.fromEntries(query)).toMatchObject({
        response_type: 'code',
        store_id: store.store.id,
        scope: 'products:read orders:read',
        code_challenge_method: 'S256',
      });
      const response = await fetch(url, { redirect: 'manual' });
      expect(response.status).toBe(302);
      expect(response.headers.get('location')).toContain('/dashboard/login');
    });

    it('a code exchanged with the wrong verifier is PKCE_MISMATCH', async () => {
      const app = await createTestApp(h, { required: ['products:read'], optional: [] });
      const pkce = await createPkcePair();
      const code = await approveAndGetCode(h, store, app, ['products:read'], pkce.challenge);
      const oauth = createOAuthClient({ baseUrl: server.origin, clientId: app.app.id, clientSecret: app.clientSecret });
      const otherVerifier = (await createPkcePair()).verifier;
      const error = await failureOf(() => oauth.exchangeCode({ code, redirectUri: REDIRECT_URI, codeVerifier: otherVerifier }));
      expect({ status: error.status, code: error.code }).toEqual({ status: 400, code: 'PKCE_MISMATCH' });
    });

    it('a wrong client secret is INVALID_CLIENT', async () => {
      const { app } = await installedApp();
      const oauth = createOAuthClient({ baseUrl: server.origin, clientId: app.app.id, clientSecret: `svc_cs_${'A'.repeat(43)}` });
      const error = await failureOf(() => oauth.token({ grant_type: 'refresh_token', refresh_token: `svc_rt_${'A'.repeat(49)}` }));
      expect({ status: error.status, code: error.code }).toEqual({ status: 401, code: 'INVALID_CLIENT' });
    });
  });

  describe('refreshing', () => {
    it('20 concurrent callers with a refused access token share one refresh, stored before it is used', async () => {
      const spy = recordingFetch();
      const { oauth, first } = await installedApp({ fetch: spy.fetch });
      const storage = memoryStorage();
      await storage.save(first);
      const tokens = managerOver(oauth, storage, () => first.expires_at - 600_000);
      h.clock.advance(901_000); // the server sees the access token expired; the manager does not know yet
      const uses: string[] = [];
      const api = storeClient(tokens, async (request) => {
        storage.events.push(`used ${request.headers.get('authorization')?.slice('Bearer '.length)}`);
        uses.push(request.headers.get('authorization') ?? '');
        return fetch(request);
      });
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => api.GET('/stores/{storeId}/v1/me', { params: { path: { storeId: store.store.id } } })),
      );
      expect(answers.every(({ response }) => response.status === 200)).toBe(true);
      expect(oauthPaths(spy.sent).filter((path) => path === '/oauth/token')).toHaveLength(2); // the code exchange and one refresh
      expect(storage.saved).toHaveLength(2);
      const fresh = storage.saved[1]!.access_token;
      expect(fresh).not.toBe(first.access_token);
      expect(uses.filter((use) => use === `Bearer ${fresh}`)).toHaveLength(20);
      expect(storage.events.indexOf(`saved ${fresh}`)).toBeLessThan(storage.events.indexOf(`used ${fresh}`));
    });

    it('20 concurrent callers that find the access token expiring share one refresh', async () => {
      const spy = recordingFetch();
      const { oauth, first } = await installedApp({ fetch: spy.fetch });
      const storage = memoryStorage();
      await storage.save(first);
      const tokens = managerOver(oauth, storage, () => first.expires_at - 30_000);
      const handed = await Promise.all(Array.from({ length: 20 }, () => tokens.accessToken()));
      expect(new Set(handed)).toEqual(new Set([storage.saved[1]!.access_token]));
      expect(oauthPaths(spy.sent).filter((path) => path === '/oauth/token')).toHaveLength(2);
      expect((await me(storage.saved[1]!.access_token)).response.status).toBe(200);
    });

    it('a dropped refresh answer is recovered by the identical request: the same operation, no sign-in again', async () => {
      let dropped = false;
      const spy = recordingFetch(async (sent, send) => {
        const response = await send();
        if (sent.path === '/oauth/token' && sent.body.includes('refresh_token') && !dropped) {
          dropped = true;
          throw connectionReset();
        }
        return response;
      });
      const { oauth, first } = await installedApp({ fetch: spy.fetch });
      const storage = memoryStorage();
      await storage.save(first);
      const tokens = managerOver(oauth, storage);
      const fresh = await tokens.refresh();
      expect(oauthPaths(spy.sent)).toEqual(['/oauth/token', '/oauth/token', '/oauth/token']);
      expect(storage.saved.map((saved) => saved.access_token)).toEqual([first.access_token, fresh]);
      expect((await me(tokens)).response.status).toBe(200);
      const refreshes = await h.db('token_operations').where({ grant_type: 'refresh_token', id: storage.saved[1]!.operation_id });
      expect(refreshes).toHaveLength(1);
      expect(await operationState(storage.saved[1]!.operation_id)).toBe('SUCCEEDED');
    });

    it('a refresh that never arrived is found out by lookup and sent: no sign-in again', async () => {
      let refused = 0;
      const spy = recordingFetch(async (sent, send) => {
        if (sent.path === '/oauth/token' && sent.body.includes('refresh_token') && refused < 2) {
          refused += 1;
          throw connectionReset();
        }
        return send();
      });
      const { oauth, first } = await installedApp({ fetch: spy.fetch });
      const storage = memoryStorage();
      await storage.save(first);
      const tokens = managerOver(oauth, storage);
      const fresh = await tokens.refresh();
      expect(oauthPaths(spy.sent)).toEqual(['/oauth/token', '/oauth/token', '/oauth/token', '/oauth/operations/lookup', '/oauth/token']);
      expect(storage.saved.at(-1)!.access_token).toBe(fresh);
      expect((await me(tokens)).response.status).toBe(200);
    });

    it('a dropped answer found too late: lookup, the lost pair recovered, REFRESH_ALREADY_USED surfaced for a new authorization', async () => {
      let dropped = false;
      const spy = recordingFetch(async (sent, send) => {
        const response = await send();
        if (sent.path === '/oauth/token' && sent.body.includes('refresh_token') && !dropped) {
          dropped = true;
          h.clock.advance(3000); // past the 2 seconds in which the server answers an identical request again
          throw connectionReset();
        }
        return response;
      });
      const { oauth, first } = await installedApp({ fetch: spy.fetch });
      const storage = memoryStorage();
      await storage.save(first);
      const tokens = managerOver(oauth, storage);
      const error = await failureOf(() => tokens.refresh());
      expect(error).toBeInstanceOf(ReauthorizationRequiredError);
      expect(error.code).toBe('REFRESH_ALREADY_USED');
      const recovered = (error as ReauthorizationRequiredError).recoveredOperationId!;
      expect(oauthPaths(spy.sent)).toEqual(['/oauth/token', '/oauth/token', '/oauth/token', '/oauth/operations/lookup', '/oauth/operations/recover']);
      expect(await operationState(recovered)).toBe('RECOVERED');
      expect(storage.saved).toHaveLength(1);
    });

    it('another process that refreshed first: its stored successor is used, the spent token is not sent', async () => {
      const { app, oauth, first } = await installedApp();
      const storage = memoryStorage();
      await storage.save(first);
      const spy = recordingFetch();
      const slow = managerOver(createOAuthClient({ baseUrl: server.origin, clientId: app.app.id, clientSecret: app.clientSecret, fetch: spy.fetch }), storage);
      await slow.current();
      const quick = managerOver(oauth, storage);
      const refreshed = await quick.refresh();
      expect((await me(quick)).response.status).toBe(200);
      expect(await slow.refresh(first.access_token)).toBe(refreshed);
      expect(spy.sent).toHaveLength(0);
    });

    it('a spent refresh token whose successor was used is TOKEN_REUSE_DETECTED, and the grant is gone', async () => {
      const { oauth, first } = await installedApp();
      const current = memoryStorage();
      await current.save(first);
      const restoredBackup = memoryStorage();
      await restoredBackup.save(first);
      const live = managerOver(oauth, current);
      await live.refresh();
      expect((await me(live)).response.status).toBe(200);
      const error = await failureOf(() => managerOver(oauth, restoredBackup).refresh());
      expect(error).toBeInstanceOf(ReauthorizationRequiredError);
      expect({ status: error.status, code: error.code }).toEqual({ status: 400, code: 'TOKEN_REUSE_DETECTED' });
      const afterwards = await failureOf(() => me(live));
      expect(afterwards).toBeInstanceOf(ReauthorizationRequiredError);
      expect(afterwards.code).toBe('INVALID_REFRESH_TOKEN');
    });

    it('no stored pair is NO_TOKENS: authorize first', async () => {
      const { oauth } = await installedApp();
      const error = await failureOf(() => managerOver(oauth, memoryStorage()).accessToken());
      expect(error).toBeInstanceOf(ReauthorizationRequiredError);
      expect(error.code).toBe('NO_TOKENS');
    });

    it('a pair whose storing failed is stored again before anything else', async () => {
      const { oauth, first } = await installedApp();
      const storage = memoryStorage();
      await storage.save(first);
      let failNext = true;
      const tokens = createTokenManager({
        oauth,
        load: storage.load,
        save: async (saved) => {
          if (failNext) {
            failNext = false;
            throw new Error('disk full');
          }
          await storage.save(saved);
        },
        now: () => h.clock.now(),
      });
      await expect(tokens.refresh()).rejects.toThrow('disk full');
      const token = await tokens.accessToken();
      expect(storage.saved.at(-1)!.access_token).toBe(token);
      expect(token).not.toBe(first.access_token);
      expect((await me(token)).response.status).toBe(200);
    });
  });
});
