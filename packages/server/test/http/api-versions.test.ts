import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createApp } from '../../src/app';
import type { CliIo } from '../../src/cli/context';
import { runCli } from '../../src/cli/run';
import { apiVersionRegistry } from '../../src/core/api-versions';
import { createDispatcher } from '../../src/delivery/dispatcher';
import { findInstallationOf } from '../../src/platform/installations';
import { depsOf, testDatabases } from '../support/databases';
import { type AppFixture, approveAndGetCode, createTestApp, createTestStore, installWithTokens, type StoreFixture, suiteHarness } from '../support/harness';
import { codeBody, postToken } from '../support/token-client';
import { type Receiver, startReceiver } from '../support/webhook-receiver';
import { postSubscription } from '../support/webhooks';

/**
 * A registry with every state a version can be in at the harness clock's 2026-11-22: retired (its
 * sunset has come), deprecated (sunset ahead), supported and current. The real registry has one
 * version, current: only a fixture can show deprecation and retirement.
 */
const FIXTURE = apiVersionRegistry([
  { version: '2024-04-01', released: '2024-04-01', deprecated: '2025-04-01', sunset: '2026-04-01', changelog: '2024-04-01' },
  { version: '2025-04-01', released: '2025-04-01', deprecated: '2026-10-15', sunset: '2027-10-15', changelog: '2025-04-01' },
  { version: '2025-10-01', released: '2025-10-01', deprecated: null, sunset: null, changelog: '2025-10-01' },
  { version: '2026-10-15', released: '2026-10-15', deprecated: null, sunset: null, changelog: '2026-10-15' },
]);

const RETIRED = '2024-04-01';
const DEPRECATED = '2025-04-01';
const SUPPORTED = '2025-10-01';
const CURRENT = '2026-10-15';

/** What an answer under the deprecated version carries besides its API-Version (2026-10-15 and 2027-10-15, midnight UTC). */
const DEPRECATION_HEADERS = {
  deprecation: '@1792022400',
  sunset: 'Fri, 15 Oct 2027 00:00:00 GMT',
  link: '</docs/#/changelog/2025-04-01>; rel="deprecation"; type="text/html", </docs/#/changelog/2025-04-01>; rel="sunset"; type="text/html"',
};

/** The versions a refusal lists: every one but the retired, as the details of UNSUPPORTED_VERSION. */
const SUPPORTED_DETAILS = [
  { location: 'header', field: 'API-Version', message: '2025-04-01 (deprecated, sunset on 2027-10-15)' },
  { location: 'header', field: 'API-Version', message: '2025-10-01 (supported, released 2025-10-01)' },
  { location: 'header', field: 'API-Version', message: '2026-10-15 (the current version)' },
];

const versionOf = (response: request.Response) => response.headers['api-version'];
const deprecationOf = (response: request.Response) => ({
  deprecation: response.headers.deprecation,
  sunset: response.headers.sunset,
  link: response.headers.link,
});
const NO_DEPRECATION = { deprecation: undefined, sunset: undefined, link: undefined };

describe.each(testDatabases())('date versions on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { apiVersions: FIXTURE });
  let store: StoreFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
  });

  /** An app installed in the store with every scope it needs here: its fixture and an access token. */
  async function installed(scopes = ['products:read', 'products:write']): Promise<{ client: AppFixture; token: string; installationId: string }> {
    const client = await createTestApp(h, { required: scopes, optional: [] });
    const tokens = await installWithTokens(h, store, client, scopes);
    const installation = await findInstallationOf(h.db, store.store.id, client.app.id);
    return { client, token: tokens.access_token, installationId: installation?.id as string };
  }

  const me = (token: string | undefined, version?: string) => {
    const call = request(h.app).get(`/stores/${store.store.id}/v1/me`);
    if (token !== undefined) call.set('Authorization', `Bearer ${token}`);
    if (version !== undefined) call.set('API-Version', version);
    return call;
  };

  const svc = async (argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = { deps: depsOf(h.db, h.clock), apiVersions: FIXTURE, out: (line) => out.push(line), err: (line) => err.push(line) };
    const code = await runCli(argv, io);
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  describe('selection', () => {
    it("serves the version the request's API-Version header names, and says so", async () => {
      const { token } = await installed();
      for (const version of [SUPPORTED, CURRENT, DEPRECATED]) {
        const answer = await me(token, version);
        expect({ status: answer.status, version: versionOf(answer) }).toEqual({ status: 200, version });
      }
    });

    it("serves the app's pinned version when the request names none: the current one from registration, then what svc pins", async () => {
      const { client, token } = await installed();
      expect(client.app.api_version).toBe(CURRENT);
      expect(versionOf(await me(token))).toBe(CURRENT);

      const pinned = await svc(['app', 'api-version', client.app.id, SUPPORTED, '--json']);
      expect(pinned.code).toBe(0);
      expect(JSON.parse(pinned.out)).toMatchObject({ id: client.app.id, api_version: SUPPORTED });
      expect(versionOf(await me(token))).toBe(SUPPORTED);
      // The header still wins over the pin.
      expect(versionOf(await me(token, CURRENT))).toBe(CURRENT);
    });

    it('serves the current version to an unpinned app', async () => {
      const { client, token } = await installed();
      await svc(['app', 'api-version', client.app.id, SUPPORTED]);
      expect((await svc(['app', 'api-version', client.app.id, 'none'])).code).toBe(0);
      expect(await h.db('apps').where({ id: client.app.id }).first()).toMatchObject({ api_version: null });
      expect(versionOf(await me(token))).toBe(CURRENT);
    });

    it('pins at registration what `app create --api-version` names, and refuses to pin a retired or unknown version', async () => {
      const created = await svc(['app', 'create', '--name', 'Legacy Sync', '--api-version', DEPRECATED, '--json']);
      expect(created.code).toBe(0);
      const appId = JSON.parse(created.out).client_id as string;
      expect(await h.db('apps').where({ id: appId }).first()).toMatchObject({ api_version: DEPRECATED });
      expect(await svc(['app', 'api-version', appId, RETIRED])).toMatchObject({
        code: 1,
        err: expect.stringContaining(`${RETIRED} was retired on 2026-04-01`),
      });
      expect(await svc(['app', 'api-version', appId, '2025-01-01'])).toMatchObject({ code: 1, err: expect.stringContaining('is not a date version') });
      expect(await svc(['app', 'api-version', appId, 'yesterday'])).toMatchObject({ code: 2, err: expect.stringContaining('must be a date version') });
      expect(await h.db('apps').where({ id: appId }).first()).toMatchObject({ api_version: DEPRECATED });
    });
  });

  describe('an unknown or retired version', () => {
    it('is 400 UNSUPPORTED_VERSION with the supported versions in details, before the token is even looked at', async () => {
      const { token } = await installed();
      for (const [asked, why] of [
        ['2025-01-01', 'is not a version of this interface'],
        [RETIRED, 'was retired on 2026-04-01'],
        ['yesterday', 'is not a version of this interface'],
        ['', 'is not a version of this interface'],
      ] as const) {
        for (const answer of [await me(token, asked), await me(undefined, asked), await me('svc_at_not-a-token', asked)]) {
          expect(answer.status).toBe(400);
          expect(answer.body.error).toEqual({ code: 'UNSUPPORTED_VERSION', message: expect.stringContaining(why), details: SUPPORTED_DETAILS });
          expect(answer.body.meta.request_id).toBe(answer.headers['x-request-id']);
          expect(versionOf(answer)).toBe(CURRENT);
        }
      }
    });

    it('is refused on the OAuth endpoints too, and on every path of the store API, known or not', async () => {
      const client = await createTestApp(h);
      const token = await postToken(h.app, client.basic, codeBody('svc_c_unknown')).set('API-Version', '1999-01-01');
      expect({ status: token.status, code: token.body.error?.code, version: versionOf(token) }).toEqual({
        status: 400,
        code: 'UNSUPPORTED_VERSION',
        version: CURRENT,
      });
      expect(token.headers['cache-control']).toBe('no-store');
      const unknownPath = await request(h.app).get(`/stores/${store.store.id}/v1/nothing-here`).set('API-Version', '1999-01-01');
      expect({ status: unknownPath.status, code: unknownPath.body.error?.code }).toEqual({ status: 400, code: 'UNSUPPORTED_VERSION' });
    });

    it('refuses every request of an app whose pin was retired, until the request names a supported version', async () => {
      const { client, token } = await installed();
      await h.db('apps').where({ id: client.app.id }).update({ api_version: RETIRED });
      const refused = await me(token);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toEqual({
        code: 'UNSUPPORTED_VERSION',
        message: expect.stringMatching(/^The app's pinned version "2024-04-01" was retired on 2026-04-01\. Send the API-Version header/),
        details: SUPPORTED_DETAILS,
      });
      expect(versionOf(await me(token, SUPPORTED))).toBe(SUPPORTED);
    });
  });

  describe('every answer names the version that served it', () => {
    it('store API answers, successes and errors alike, before and after the app is known', async () => {
      const { client, token } = await installed(['products:read']);
      await svc(['app', 'api-version', client.app.id, SUPPORTED]);
      const answers = {
        ok: await me(token),
        unauthenticated: await me(undefined),
        unauthenticatedWithHeader: await me(undefined, DEPRECATED),
        forbidden: await request(h.app).get(`/stores/${store.store.id}/v1/orders`).set('Authorization', `Bearer ${token}`),
        notFound: await request(h.app).get(`/stores/${store.store.id}/v1/products/999999`).set('Authorization', `Bearer ${token}`),
        unknownQuery: await request(h.app).get(`/stores/${store.store.id}/v1/products?colour=red`).set('Authorization', `Bearer ${token}`),
        noSuchPath: await request(h.app).get(`/stores/${store.store.id}/v1/nothing-here`).set('Authorization', `Bearer ${token}`),
      };
      const seen = Object.fromEntries(Object.entries(answers).map(([name, answer]) => [name, [answer.status, versionOf(answer)]]));
      expect(seen).toEqual({
        ok: [200, SUPPORTED],
        // No token, no app: the header's version, else the current one.
        unauthenticated: [401, CURRENT],
        unauthenticatedWithHeader: [401, DEPRECATED],
        forbidden: [403, SUPPORTED],
        notFound: [404, SUPPORTED],
        // The validator refuses it before the token is read.
        unknownQuery: [422, CURRENT],
        noSuchPath: [404, CURRENT],
      });
    });

    it("OAuth answers: the client's pin once it is authenticated, the header's or the current one before", async () => {
      const client = await createTestApp(h, { required: ['products:read'], optional: [] });
      await svc(['app', 'api-version', client.app.id, SUPPORTED]);
      const code = await approveAndGetCode(h, store, client, ['products:read']);
      const issued = await postToken(h.app, client.basic, codeBody(code));
      expect({ status: issued.status, version: versionOf(issued) }).toEqual({ status: 200, version: SUPPORTED });
      const unknownCode = codeBody(`svc_c_${'x'.repeat(43)}`);
      const refused = await postToken(h.app, client.basic, unknownCode);
      expect({ status: refused.status, version: versionOf(refused) }).toEqual({ status: 400, version: SUPPORTED });
      const wrongSecret = await postToken(h.app, `Basic ${Buffer.from(`${client.app.id}:svc_cs_wrong`).toString('base64')}`, unknownCode);
      expect({ status: wrongSecret.status, version: versionOf(wrongSecret) }).toEqual({ status: 401, version: CURRENT });
      const asked = await postToken(h.app, client.basic, unknownCode).set('API-Version', DEPRECATED);
      expect({ status: asked.status, version: versionOf(asked), ...deprecationOf(asked) }).toEqual({
        status: 400,
        version: DEPRECATED,
        ...DEPRECATION_HEADERS,
      });
      const authorize = await request(h.app).get('/oauth/authorize').query({ response_type: 'code', client_id: client.app.id });
      expect(authorize.status).toBeGreaterThanOrEqual(200);
      expect(versionOf(authorize)).toBe(CURRENT);
    });

    it('the probes: always the current version, whatever the header', async () => {
      for (const asked of [undefined, DEPRECATED, '1999-01-01']) {
        const call = request(h.app).get('/livez');
        const answer = await (asked === undefined ? call : call.set('API-Version', asked));
        expect({ status: answer.status, version: versionOf(answer), ...deprecationOf(answer) }).toEqual({ status: 200, version: CURRENT, ...NO_DEPRECATION });
      }
    });

    it('not the docs, the document or the dashboard, which are not the interface', async () => {
      expect(versionOf(await request(h.app).get('/openapi.json'))).toBeUndefined();
      expect(versionOf(await request(h.app).get('/dashboard/login'))).toBeUndefined();
    });
  });

  describe('deprecation', () => {
    it('answers under a deprecated version carry Deprecation, Sunset and Link, errors too; others carry none', async () => {
      const { client, token } = await installed();
      for (const answer of [
        await me(token, DEPRECATED),
        await request(h.app).get(`/stores/${store.store.id}/v1/products/999999`).set('API-Version', DEPRECATED).set('Authorization', `Bearer ${token}`),
      ]) {
        expect({ version: versionOf(answer), ...deprecationOf(answer) }).toEqual({ version: DEPRECATED, ...DEPRECATION_HEADERS });
      }
      for (const version of [SUPPORTED, CURRENT]) expect(deprecationOf(await me(token, version))).toEqual(NO_DEPRECATION);
      // A deprecated pin: the same headers, and a header naming a current version leaves them out.
      await svc(['app', 'api-version', client.app.id, DEPRECATED]);
      expect({ version: versionOf(await me(token)), ...deprecationOf(await me(token)) }).toEqual({ version: DEPRECATED, ...DEPRECATION_HEADERS });
      expect(deprecationOf(await me(token, CURRENT))).toEqual(NO_DEPRECATION);
    });

    it('lets a browser app read the version headers (CORS exposes what the spec declares)', async () => {
      const app = createApp({
        config: { validateResponses: true, exposeInternalErrors: true, corsOrigins: ['https://app.example.com'] },
        services: h.services,
      });
      const { token } = await installed();
      const answer = await request(app)
        .get(`/stores/${store.store.id}/v1/me`)
        .set('Origin', 'https://app.example.com')
        .set('Authorization', `Bearer ${token}`)
        .set('API-Version', DEPRECATED);
      const exposed = String(answer.headers['access-control-expose-headers']).split(/,\s*/);
      expect(exposed).toEqual(expect.arrayContaining(['API-Version', 'Deprecation', 'Sunset', 'Link']));
    });
  });

  describe('usage', () => {
    it('is recorded per installation, version and day, written once a day per pair however many calls come', async () => {
      const { client, token, installationId } = await installed();
      await me(token, DEPRECATED);
      await me(token, DEPRECATED);
      await me(token);
      await h.services.versionUse.written();
      const rows = () => h.db('api_version_usage').where({ installation_id: installationId }).orderBy('api_version');
      expect(await rows()).toEqual([
        expect.objectContaining({ api_version: DEPRECATED, first_seen_day: '2026-11-22', last_seen_day: '2026-11-22', days_seen: 1 }),
        expect.objectContaining({ api_version: CURRENT, first_seen_day: '2026-11-22', last_seen_day: '2026-11-22', days_seen: 1 }),
      ]);
      // The rest of the day costs no write: a row taken away is not written again until the next day.
      await h.db('api_version_usage').where({ installation_id: installationId, api_version: CURRENT }).delete();
      await me(token);
      await h.services.versionUse.written();
      expect((await rows()).map((row) => row.api_version)).toEqual([DEPRECATED]);

      const today = h.clock.now();
      h.clock.set('2026-11-24T08:00:00Z');
      try {
        const later = await installWithTokens(h, store, client, ['products:read', 'products:write']);
        await me(later.access_token, DEPRECATED);
        await me(later.access_token);
        await h.services.versionUse.written();
        expect(await rows()).toEqual([
          expect.objectContaining({ api_version: DEPRECATED, first_seen_day: '2026-11-22', last_seen_day: '2026-11-24', days_seen: 2 }),
          expect.objectContaining({ api_version: CURRENT, first_seen_day: '2026-11-24', last_seen_day: '2026-11-24', days_seen: 1 }),
        ]);
      } finally {
        h.clock.set(today);
      }
    });

    it('is what `svc api-version usage --deprecated` reports: the installations still calling a deprecated version', async () => {
      const stale = await installed();
      const fresh = await installed();
      await me(stale.token, DEPRECATED);
      await me(fresh.token, CURRENT);
      await h.services.versionUse.written();

      const report = await svc(['api-version', 'usage', '--deprecated', '--json']);
      expect(report.code).toBe(0);
      const uses = JSON.parse(report.out) as Array<Record<string, unknown>>;
      expect(uses).toContainEqual({
        api_version: DEPRECATED,
        state: 'deprecated',
        installation_id: stale.installationId,
        installation_status: 'installed',
        app_id: stale.client.app.id,
        app_name: 'Stock Sync',
        store_id: store.store.id,
        first_seen_day: '2026-11-22',
        last_seen_day: '2026-11-22',
        days_seen: 1,
      });
      expect(uses.every((use) => use.state === 'deprecated' || use.state === 'retired' || use.state === 'unknown')).toBe(true);
      expect(uses.some((use) => use.installation_id === fresh.installationId)).toBe(false);

      const all = JSON.parse((await svc(['api-version', 'usage', '--json'])).out) as Array<Record<string, unknown>>;
      expect(all).toContainEqual(expect.objectContaining({ api_version: CURRENT, state: 'current', installation_id: fresh.installationId }));
      const text = await svc(['api-version', 'usage', '--deprecated']);
      expect(text.out.split('\n')[0]).toMatch(/^VERSION\s+STATE\s+INSTALLATION\s+APP\s+STORE\s+FIRST_SEEN\s+LAST_SEEN\s+DAYS$/);
      expect(text.out).toContain(stale.installationId);
      expect(text.out).not.toContain(fresh.installationId);
    });

    it('`svc api-version list` shows the registry with where each version stands', async () => {
      const listed = JSON.parse((await svc(['api-version', 'list', '--json'])).out) as Array<{ version: string; state: string }>;
      expect(listed.map(({ version, state }) => [version, state])).toEqual([
        [CURRENT, 'current'],
        [SUPPORTED, 'supported'],
        [DEPRECATED, 'deprecated'],
        [RETIRED, 'retired'],
      ]);
    });
  });

  describe('webhooks', () => {
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
      h.atEnd(() => receiver.close());
    });

    it("builds each subscription's events for the version its create request was served under, and says so in api_version", async () => {
      const writer = await installed(['products:read', 'products:write']);
      const pinned = await installed(['products:read']);
      await svc(['app', 'api-version', pinned.client.app.id, SUPPORTED]);
      const subscribe = async (token: string, path: string, version?: string) => {
        const call = postSubscription(h.app, store.store.id, token, { endpoint_url: receiver.url(path), event_types: ['product.created'] });
        const answer = await (version === undefined ? call : call.set('API-Version', version));
        expect(answer.status).toBe(201);
        return answer.body.data as { id: string; api_version: string };
      };
      const paths = { header: `/hooks/${randomUUID()}`, pin: `/hooks/${randomUUID()}`, current: `/hooks/${randomUUID()}` };
      const byHeader = await subscribe(pinned.token, paths.header, DEPRECATED);
      const byPin = await subscribe(pinned.token, paths.pin);
      const byCurrent = await subscribe(writer.token, paths.current);
      expect([byHeader.api_version, byPin.api_version, byCurrent.api_version]).toEqual([DEPRECATED, SUPPORTED, CURRENT]);
      const listed = await request(h.app).get(`/stores/${store.store.id}/v1/webhook-subscriptions`).set('Authorization', `Bearer ${pinned.token}`);
      expect(listed.body.data.map((subscription: { api_version: string }) => subscription.api_version).sort()).toEqual([DEPRECATED, SUPPORTED]);

      const created = await request(h.app)
        .post(`/stores/${store.store.id}/v1/products`)
        .set('Authorization', `Bearer ${writer.token}`)
        .set('Idempotency-Key', randomUUID())
        .send({ name: 'Royal Oud', product_kind: 'physical' });
      expect(created.status).toBe(201);
      const dispatcher = createDispatcher(h.services, { random: () => 0.5 });
      while ((await dispatcher.runOnce()) > 0);
      const bodies = Object.fromEntries(
        Object.entries(paths).map(([name, path]) => {
          const [delivery] = receiver.receivedAt(path);
          return [name, JSON.parse(delivery?.body ?? '{}') as { api_version?: string; id?: string; data?: unknown }];
        }),
      );
      expect(Object.fromEntries(Object.entries(bodies).map(([name, body]) => [name, body.api_version]))).toEqual({
        header: DEPRECATED,
        pin: SUPPORTED,
        current: CURRENT,
      });
      // One event: the same id and data whatever the version (every version's events have one shape today).
      expect(new Set(Object.values(bodies).map((body) => body.id)).size).toBe(1);
      expect(bodies.header?.data).toEqual(bodies.current?.data);

      // The test event says the subscription's version too.
      const tested = await request(h.app)
        .post(`/stores/${store.store.id}/v1/webhook-subscriptions/${byHeader.id}/test`)
        .set('Authorization', `Bearer ${pinned.token}`)
        .set('Idempotency-Key', randomUUID());
      expect(tested.status).toBe(200);
      const testEvent = receiver
        .receivedAt(paths.header)
        .map((delivery) => JSON.parse(delivery.body) as { type: string; api_version: string })
        .find((event) => event.type === 'webhook.test');
      expect(testEvent?.api_version).toBe(DEPRECATED);
    });
  });
});
