import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { hashSecret } from '../../src/credentials/secrets';
import { issueLaunch } from '../../src/oauth/launch';
import { revokeClientSecret, rotateClientSecret } from '../../src/platform/apps';
import { answerConsentForm, authorizeQuery, authorizeUrl, CookieJar, inputValue, signInAndOpenConsent } from '../support/browser';
import { testDatabases } from '../support/databases';
import {
  type AppFixture,
  approveAndGetCode,
  basicHeader,
  createTestApp,
  createTestStore,
  installWithTokens,
  type StoreFixture,
  suiteHarness,
} from '../support/harness';
import { codeBody, expectAccessWorks, expectInvalidClient, expectOAuthError, getMe, obtainTokens, postOAuth, refreshBody } from '../support/token-client';

const SCOPES = ['products:read', 'products:write'];
const PREVIOUS_SECRET_MS = 24 * 60 * 60 * 1000;

/** Every table of the schema the app works in. */
async function listTables(db: Knex): Promise<string[]> {
  if (db.client.config.client === 'pg') {
    return db('information_schema.tables').where('table_schema', db.raw('current_schema()')).andWhere('table_type', 'BASE TABLE').pluck('table_name');
  }
  return db('sqlite_master').where({ type: 'table' }).pluck('name');
}

/** Every column of every row of every table, as text. */
async function dumpDatabase(db: Knex): Promise<{ tables: string[]; text: string }> {
  const tables = await listTables(db);
  const parts: string[] = [];
  for (const table of tables) {
    const rows: Record<string, unknown>[] = await db(table).select('*');
    for (const row of rows) {
      for (const value of Object.values(row))
        parts.push(Buffer.isBuffer(value) ? value.toString('utf8') : typeof value === 'object' ? JSON.stringify(value) : String(value));
    }
  }
  return { tables, text: parts.join('\n') };
}

describe.each(testDatabases())('client secrets and what is stored, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
  });

  /** Any request a client authenticates: a status probe of an unknown operation (404 once authenticated). */
  const probe = (authorization: string) => postOAuth(h.app, '/oauth/operations/status', authorization, { operation_id: randomUUID() });
  const expectAccepted = async (secretOf: AppFixture, secret: string) =>
    expectOAuthError(await probe(basicHeader(secretOf.app.id, secret)), 404, 'OPERATION_NOT_FOUND');
  async function expectRejected(secretOf: AppFixture, secret: string): Promise<void> {
    const response = await probe(basicHeader(secretOf.app.id, secret));
    expectInvalidClient(response);
  }

  it('after a rotation both the previous and the new secret authenticate the client', async () => {
    const client = await createTestApp(h);
    const { clientSecret } = await rotateClientSecret(h.services, client.app.id);
    expect(clientSecret).toMatch(/^svc_cs_[A-Za-z0-9_-]{43}$/);
    await expectAccepted(client, client.clientSecret);
    await expectAccepted(client, clientSecret);
    // The new secret works on the token endpoint too.
    const code = await approveAndGetCode(h, store, client, ['products:read']);
    await obtainTokens(h.app, basicHeader(client.app.id, clientSecret), codeBody(code));
  });

  it('the previous secret works until 24 hours after the rotation: at 24 h − 1 ms it does, at 24 h it is 401 INVALID_CLIENT', async () => {
    const client = await createTestApp(h);
    const { clientSecret } = await rotateClientSecret(h.services, client.app.id);
    h.clock.advance(PREVIOUS_SECRET_MS - 1);
    await expectAccepted(client, client.clientSecret);
    h.clock.advance(1);
    await expectRejected(client, client.clientSecret);
    await expectAccepted(client, clientSecret);
  });

  it('a revoked secret fails at once, the previous one during its 24 hours as well as the current one', async () => {
    const client = await createTestApp(h);
    const { clientSecret } = await rotateClientSecret(h.services, client.app.id);
    await revokeClientSecret(h.services, client.app.id, client.clientSecret.slice(-4));
    await expectRejected(client, client.clientSecret);
    await expectAccepted(client, clientSecret);
    await revokeClientSecret(h.services, client.app.id, clientSecret.slice(-4));
    await expectRejected(client, clientSecret);
  });

  it('execution.appAuthEpoch on /me rises with each rotation and revocation', async () => {
    const client = await createTestApp(h);
    const tokens = await installWithTokens(h, store, client, ['products:read']);
    const epoch = async () => (await getMe(h.app, store.store.id, tokens.access_token)).body.execution.appAuthEpoch as number;
    const first = await epoch();
    const { clientSecret } = await rotateClientSecret(h.services, client.app.id);
    expect(await epoch()).toBe(first + 1);
    await revokeClientSecret(h.services, client.app.id, clientSecret.slice(-4));
    expect(await epoch()).toBe(first + 2);
  });

  it('no secret, token, code, launch token, session or password is stored in clear, in any column of any table', async () => {
    const owner = await createTestStore(h, 'Amber House');
    const client = await createTestApp(h);
    const rotated = await rotateClientSecret(h.services, client.app.id);
    const basic = basicHeader(client.app.id, rotated.clientSecret);

    const installedPair = await installWithTokens(h, owner, client, SCOPES);
    const code = await approveAndGetCode(h, owner, client, SCOPES);
    const exchanged = await obtainTokens(h.app, basic, codeBody(code));
    await expectAccessWorks(h.app, owner.store.id, exchanged.access_token);
    const refreshed = await obtainTokens(h.app, client.basic, refreshBody(exchanged.refresh_token));

    const launchToken = new URL(await issueLaunch(h.services, owner.store.id, client.app.id)).searchParams.get('svc_launch_token') as string;

    const jar = new CookieJar();
    const consent = await signInAndOpenConsent(h.app, jar, owner, authorizeUrl(authorizeQuery(owner, client, SCOPES)));
    expect(consent.status).toBe(200);
    const session = jar.get('svc_session') as string;
    const csrf = inputValue(consent.text, 'csrf');
    const answered = await answerConsentForm(h.app, jar, consent.text, 'approve');
    const browserCode = new URL(answered.headers.location as string).searchParams.get('code') as string;
    const browserPair = await obtainTokens(h.app, basic, codeBody(browserCode));

    const clear: Record<string, string> = {
      'client secret': client.clientSecret,
      'rotated client secret': rotated.clientSecret,
      'authorization code': code,
      'authorization code (browser)': browserCode,
      'launch token': launchToken,
      'session cookie': session,
      'session CSRF token': csrf,
      'owner password': owner.password,
    };
    for (const [name, pair] of Object.entries({ installed: installedPair, exchanged, refreshed, browser: browserPair })) {
      clear[`access token (${name})`] = pair.access_token;
      clear[`refresh token (${name})`] = pair.refresh_token;
    }
    for (const value of Object.values(clear)) expect(value.length).toBeGreaterThanOrEqual(20);

    const dump = await dumpDatabase(h.db);
    expect(dump.tables).toEqual(
      expect.arrayContaining(['client_secrets', 'tokens', 'authorization_codes', 'launch_tokens', 'dashboard_sessions', 'store_owners', 'token_operations']),
    );
    // The dump does hold what was stored: the hashes.
    expect(dump.text).toContain(hashSecret(rotated.clientSecret));
    expect(dump.text).toContain(hashSecret(refreshed.access_token));
    expect(dump.text).toContain(hashSecret(session));

    const leaked = Object.entries(clear)
      .filter(([, value]) => dump.text.includes(value))
      .map(([name]) => name);
    expect(leaked).toEqual([]);
  });
});
