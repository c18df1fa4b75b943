import { randomUUID } from 'node:crypto';
import type request from 'supertest';
import { issueSecret } from '../../src/credentials/secrets';
import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { testDatabases } from '../support/databases';
import { type AppFixture, approveAndGetCode, createTestApp, createTestStore, type StoreFixture, suiteHarness, UUID } from '../support/harness';
import { installedStockSync } from '../support/oauth-apps';
import {
  codeBody,
  type Encoding,
  expectAccessRefused,
  expectAccessWorks,
  expectOAuthError,
  expectRefreshRefused,
  obtainTokens,
  postOAuth,
  refreshBody,
  type TokenBody,
} from '../support/token-client';

const SCOPES = ['products:read', 'products:write'];
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Issued tokens are never sent again: no answer of the operation endpoints carries one. */
function expectNoTokens(response: request.Response): request.Response {
  expect(response.body).not.toHaveProperty('access_token');
  expect(response.body).not.toHaveProperty('refresh_token');
  expect(JSON.stringify(response.body)).not.toMatch(/svc_(at|rt)_/);
  return response;
}

describe.each(testDatabases())('POST /oauth/operations/lookup, status and recover, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
  });

  async function installed(): Promise<{ client: AppFixture; tokens: TokenResponse }> {
    return installedStockSync(h, store, SCOPES);
  }

  const lookup = async (client: AppFixture, body: TokenBody, encoding: Encoding = 'json') =>
    expectNoTokens(await postOAuth(h.app, '/oauth/operations/lookup', client.basic, body, encoding));
  const status = async (client: AppFixture, operationId: string) =>
    expectNoTokens(await postOAuth(h.app, '/oauth/operations/status', client.basic, { operation_id: operationId }));
  const recover = async (client: AppFixture, operationId: string) =>
    expectNoTokens(await postOAuth(h.app, '/oauth/operations/recover', client.basic, { operation_id: operationId }));
  const refreshed = (client: AppFixture, refreshToken: string) => obtainTokens(h.app, client.basic, refreshBody(refreshToken));

  it('recovers a lost refresh response: lookup 409 RESULT_UNAVAILABLE_REAUTHORIZE → status → recover revokes its tokens → authorize again', async () => {
    const { client, tokens } = await installed();
    // The refresh succeeds but its response never reaches the app.
    const lost = await refreshed(client, tokens.refresh_token);

    const looked = await lookup(client, refreshBody(tokens.refresh_token), 'form');
    expectOAuthError(looked, 409, 'RESULT_UNAVAILABLE_REAUTHORIZE');
    expect(looked.body.error.operation_id).toBe(lost.operation_id);

    const described = await status(client, looked.body.error.operation_id);
    expect(described.status).toBe(200);
    expect(described.body).toEqual({
      operation_id: lost.operation_id,
      state: 'RESULT_UNAVAILABLE_REAUTHORIZE',
      grant_type: 'refresh_token',
      installation_id: tokens.installation_id,
      created_at: expect.stringMatching(ISO_INSTANT),
      completed_at: expect.stringMatching(ISO_INSTANT),
      error_code: null,
    });

    h.clock.advance(1000);
    const recovered = await recover(client, lost.operation_id);
    expect(recovered.status).toBe(200);
    expect(recovered.body).toEqual({
      operation_id: lost.operation_id,
      state: 'RECOVERED',
      revoked_tokens: 2,
      recovered_at: new Date(h.clock.now()).toISOString(),
    });
    await expectAccessRefused(h.app, store.store.id, lost.access_token);
    await expectRefreshRefused(h.app, client.basic, lost.refresh_token);
    expect((await status(client, lost.operation_id)).body.state).toBe('RECOVERED');
    const afterwards = await lookup(client, refreshBody(tokens.refresh_token));
    expect(afterwards.status).toBe(200);
    expect(afterwards.body.state).toBe('RECOVERED');

    const code = await approveAndGetCode(h, store, client, SCOPES);
    const again = await obtainTokens(h.app, client.basic, codeBody(code));
    await expectAccessWorks(h.app, store.store.id, again.access_token);
  });

  it('a lookup of an operation whose tokens were used answers 200 SUCCEEDED', async () => {
    const { client, tokens } = await installed();
    const used = await refreshed(client, tokens.refresh_token);
    await expectAccessWorks(h.app, store.store.id, used.access_token);

    const looked = await lookup(client, refreshBody(tokens.refresh_token));
    expect(looked.status).toBe(200);
    expect(looked.body).toEqual({
      operation_id: used.operation_id,
      state: 'SUCCEEDED',
      grant_type: 'refresh_token',
      installation_id: tokens.installation_id,
      created_at: expect.stringMatching(ISO_INSTANT),
      completed_at: expect.stringMatching(ISO_INSTANT),
      error_code: null,
    });
    // Nothing is consumed or revoked by a lookup.
    await expectAccessWorks(h.app, store.store.id, used.access_token);
  });

  it('a lookup of a failed request answers 200 FAILED with its error_code', async () => {
    const { client } = await installed();
    const code = await approveAndGetCode(h, store, client, SCOPES);
    const failedBody = codeBody(code, { code_verifier: 'x'.repeat(43) });
    expectOAuthError(await postOAuth(h.app, '/oauth/token', client.basic, failedBody, 'form'), 400, 'PKCE_MISMATCH');

    const looked = await lookup(client, failedBody);
    expect(looked.status).toBe(200);
    expect(looked.body).toMatchObject({
      operation_id: expect.stringMatching(UUID),
      state: 'FAILED',
      grant_type: 'authorization_code',
      error_code: 'PKCE_MISMATCH',
    });
  });

  it('a lookup of a body this client never sent is 404 OPERATION_NOT_FOUND', async () => {
    const { client } = await installed();
    expectOAuthError(await lookup(client, refreshBody(issueSecret('refreshToken'))), 404, 'OPERATION_NOT_FOUND');
  });

  it("another client's operation is 404 OPERATION_NOT_FOUND for lookup, status and recover, and is left as it was", async () => {
    const { client, tokens } = await installed();
    const other = await createTestApp(h, { name: 'Other App' });
    const owned = await refreshed(client, tokens.refresh_token);
    await expectAccessWorks(h.app, store.store.id, owned.access_token);

    expectOAuthError(await lookup(other, refreshBody(tokens.refresh_token)), 404, 'OPERATION_NOT_FOUND');
    expectOAuthError(await status(other, owned.operation_id), 404, 'OPERATION_NOT_FOUND');
    expectOAuthError(await recover(other, owned.operation_id), 404, 'OPERATION_NOT_FOUND');

    expect((await status(client, owned.operation_id)).body.state).toBe('SUCCEEDED');
    await expectAccessWorks(h.app, store.store.id, owned.access_token);
  });

  it('status and recover of an unknown operation id are 404 OPERATION_NOT_FOUND', async () => {
    const { client } = await installed();
    expectOAuthError(await status(client, randomUUID()), 404, 'OPERATION_NOT_FOUND');
    expectOAuthError(await recover(client, randomUUID()), 404, 'OPERATION_NOT_FOUND');
  });

  it("recovering again changes nothing and answers the first recovery's values", async () => {
    const { client, tokens } = await installed();
    const first = await recover(client, tokens.operation_id);
    expect(first.status).toBe(200);
    expect(first.body.revoked_tokens).toBe(2);

    h.clock.advance(60_000);
    const second = await recover(client, tokens.operation_id);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
  });

  it('a FAILED operation cannot be recovered: 400 INVALID_REQUEST', async () => {
    const { client } = await installed();
    const failedBody = codeBody(issueSecret('authorizationCode'));
    expectOAuthError(await postOAuth(h.app, '/oauth/token', client.basic, failedBody), 400, 'INVALID_CODE');
    const failed = await lookup(client, failedBody);
    expect(failed.body.state).toBe('FAILED');

    expectOAuthError(await recover(client, failed.body.operation_id), 400, 'INVALID_REQUEST');
    expect((await status(client, failed.body.operation_id)).body.state).toBe('FAILED');
  });

  it.each(['status', 'recover'])('%s with an operation_id that is not a UUID is 400 INVALID_REQUEST', async (endpoint) => {
    const { client } = await installed();
    expectOAuthError(await postOAuth(h.app, `/oauth/operations/${endpoint}`, client.basic, { operation_id: 'not-a-uuid' }), 400, 'INVALID_REQUEST');
  });

  it.each<[string, Record<string, string>]>([
    ['another key', { note: 'lost' }],
    ['client credentials', { client_secret: 'svc_cs_0000000000000000000000000000000000000000000' }],
  ])('recover with %s besides operation_id is 400 INVALID_REQUEST and recovers nothing', async (_, extra) => {
    const { client, tokens } = await installed();
    const response = await postOAuth(h.app, '/oauth/operations/recover', client.basic, { operation_id: tokens.operation_id, ...extra });
    expectOAuthError(response, 400, 'INVALID_REQUEST');
    await expectAccessWorks(h.app, store.store.id, tokens.access_token);
  });

  it('a lookup with a key outside the token request is 400 INVALID_REQUEST', async () => {
    const { client, tokens } = await installed();
    expectOAuthError(await lookup(client, { ...refreshBody(tokens.refresh_token), client_id: client.app.id }), 400, 'INVALID_REQUEST');
  });
});
