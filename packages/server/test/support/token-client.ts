import type { Express } from 'express';
import type { Knex } from 'knex';
import request from 'supertest';
import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { REDIRECT_URI, RFC7636_VERIFIER, UUID } from './harness';

/**
 * The OAuth endpoints as a client app calls them: HTTP Basic and a form-encoded or JSON body,
 * against the in-process app or a real server's origin.
 */
export type Target = Express | string;
export type Encoding = 'form' | 'json';
export type TokenBody = Record<string, string>;

export function postOAuth(target: Target, path: string, authorization: string | undefined, body: object, encoding: Encoding = 'json'): request.Test {
  const call = request(target).post(path);
  if (authorization !== undefined) call.set('Authorization', authorization);
  return encoding === 'form' ? call.type('form').send(body) : call.send(body);
}

export const codeBody = (code: string, overrides: TokenBody = {}): TokenBody => ({
  grant_type: 'authorization_code',
  code,
  redirect_uri: REDIRECT_URI,
  code_verifier: RFC7636_VERIFIER,
  ...overrides,
});

/**
 * A successful token response as the token endpoint sends it (RFC 6749 §5.1 and this server's
 * fields), for `toEqual`: a new pair, Bearer, 900 s, and the grant it belongs to. `installationId`
 * defaults to any UUID (a first exchange makes it).
 */
export function tokenResponse(expected: {
  scope: string;
  storeId: string;
  installationId?: string;
  installationGeneration?: number;
  grantRevision?: number;
}): Record<string, unknown> {
  return {
    access_token: expect.stringMatching(/^svc_at_/),
    refresh_token: expect.stringMatching(/^svc_rt_/),
    token_type: 'Bearer',
    expires_in: 900,
    scope: expected.scope,
    store_id: expected.storeId,
    installation_id: expected.installationId ?? expect.stringMatching(UUID),
    installation_generation: expected.installationGeneration ?? 1,
    grant_revision: expected.grantRevision ?? 1,
    operation_id: expect.stringMatching(UUID),
  };
}

export const refreshBody = (refreshToken: string): TokenBody => ({ grant_type: 'refresh_token', refresh_token: refreshToken });

export const postToken = (target: Target, authorization: string | undefined, body: object, encoding: Encoding = 'form') =>
  postOAuth(target, '/oauth/token', authorization, body, encoding);

/** A token request that must succeed: its pair. */
export async function obtainTokens(target: Target, authorization: string, body: TokenBody, encoding: Encoding = 'form'): Promise<TokenResponse> {
  const response = await postToken(target, authorization, body, encoding);
  if (response.status !== 200) throw new Error(`Token request failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as TokenResponse;
}

export const getMe = (target: Target, storeId: string, accessToken: string) =>
  request(target).get(`/stores/${storeId}/v1/me`).set('Authorization', `Bearer ${accessToken}`);

/** The interface's error format: the status, `error.code`, and `meta.request_id` (also in X-Request-Id). */
export function expectError(response: request.Response, status: number, code: string): void {
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code });
  expect(typeof response.body.error.message).toBe('string');
  expect(response.body.meta.request_id).toMatch(UUID);
  expect(response.headers['x-request-id']).toBe(response.body.meta.request_id);
}

/** An /oauth error: the error format plus `Cache-Control: no-store`. */
export function expectOAuthError(response: request.Response, status: number, code: string): void {
  expectError(response, status, code);
  expect(response.headers['cache-control']).toBe('no-store');
}

/** A client the endpoint did not authenticate (RFC 6749 §5.2): 401 INVALID_CLIENT, asking for HTTP Basic. */
export function expectInvalidClient(response: request.Response): void {
  expectOAuthError(response, 401, 'INVALID_CLIENT');
  expect(response.headers['www-authenticate']).toMatch(/^Basic\b/);
}

export async function expectAccessWorks(target: Target, storeId: string, accessToken: string): Promise<void> {
  const me = await getMe(target, storeId, accessToken);
  expect(me.status).toBe(200);
}

export async function expectAccessRefused(target: Target, storeId: string, accessToken: string): Promise<void> {
  const me = await getMe(target, storeId, accessToken);
  expectError(me, 401, 'UNAUTHENTICATED');
  expect(me.headers['www-authenticate']).toMatch(/^Bearer /);
}

export async function expectRefreshRefused(target: Target, authorization: string, refreshToken: string): Promise<void> {
  expectOAuthError(await postToken(target, authorization, refreshBody(refreshToken)), 400, 'INVALID_REFRESH_TOKEN');
}

/** Identical requests that were one operation: every response is 200 with the same pair and operation id. */
export function expectOneSharedPair(responses: request.Response[]): TokenResponse {
  const pairOf = (response: request.Response) => ({
    status: response.status,
    access_token: response.body.access_token as unknown,
    refresh_token: response.body.refresh_token as unknown,
    operation_id: response.body.operation_id as unknown,
  });
  const first = responses[0];
  if (!first) throw new Error('No responses');
  expect(first.status).toBe(200);
  for (const response of responses) expect(pairOf(response)).toEqual(pairOf(first));
  return first.body as TokenResponse;
}

/** How many rows of the `tokens` table match (all of them without a filter). */
export async function countTokens(db: Knex, where: Record<string, string> = {}): Promise<number> {
  const row = await db('tokens').where(where).count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}
