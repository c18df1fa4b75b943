import type { components, paths, Scope } from '@svc/contract';
import createClient from 'openapi-fetch';
import { StoreApiError } from './errors';
import { sendingFetch, type TransportOptions } from './transport';
import { API_VERSION_HEADER } from './versions';

export type TokenResponse = components['schemas']['TokenResponse'];
export type TokenRequest = components['schemas']['TokenRequest'];
export type TokenOperation = components['schemas']['TokenOperation'];
export type OperationRecovery = components['schemas']['OperationRecovery'];
export type LaunchVerification = components['schemas']['LaunchVerification'];

const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

const randomToken = (): string => base64url(globalThis.crypto.getRandomValues(new Uint8Array(32)));

/** A PKCE pair (RFC 7636, S256): keep `verifier` with the authorization request, send `challenge`. */
export interface PkcePair {
  verifier: string;
  challenge: string;
  method: 'S256';
}

/** A fresh PKCE pair: a 43-character verifier of 256 random bits and its S256 challenge. */
export async function createPkcePair(): Promise<PkcePair> {
  const verifier = randomToken();
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return { verifier, challenge: base64url(new Uint8Array(digest)), method: 'S256' };
}

/** A fresh `state` (43 characters, 256 random bits): store it with the verifier and compare it on the callback. */
export const createState = (): string => randomToken();

export interface AuthorizeUrlOptions {
  baseUrl: string;
  clientId: string;
  /** The store the owner installs the app in (the launch URL names it as `svc_store_id`). */
  storeId: string;
  redirectUri: string;
  state: string;
  /** Every required scope of the app version, and the optional ones wanted. */
  scopes: readonly Scope[];
  codeChallenge: string;
  /** The app version to authorize; the newest when left out. */
  versionId?: string;
}

/** Where to send the store owner's browser to install or re-authorize the app (`GET /oauth/authorize`). */
export function authorizeUrl(options: AuthorizeUrlOptions): string {
  const url = new URL('/oauth/authorize', options.baseUrl);
  const query: Record<string, string> = {
    response_type: 'code',
    client_id: options.clientId,
    store_id: options.storeId,
    redirect_uri: options.redirectUri,
    state: options.state,
    code_challenge: options.codeChallenge,
    code_challenge_method: 'S256',
    scope: options.scopes.join(' '),
  };
  if (options.versionId !== undefined) query.version_id = options.versionId;
  url.search = new URLSearchParams(query).toString();
  return url.toString();
}

/**
 * The OAuth client's transport: `fetch`, `timeoutMs`, `appInfo`, and `retry` for 429 and 503
 * answers (a token request is a POST without an `Idempotency-Key`, so it is never repeated after a
 * 5xx, a timeout or a lost answer here: the token manager decides, through lookup).
 */
export interface OAuthClientOptions extends TransportOptions {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The date version to call under, sent as the `API-Version` header; left out, the app's pinned version applies. */
  apiVersion?: string;
}

/** The OAuth endpoints an app's backend calls, with its client credentials; every failure is a `StoreApiError`. */
export interface OAuthClient {
  /** Exchanges the code the callback received (after checking its `state`). Store the pair before anything else. */
  exchangeCode(exchange: { code: string; redirectUri: string; codeVerifier: string }): Promise<TokenResponse>;
  /** Sends a token request as it is: the token manager's refresh and its identical resend. */
  token(body: TokenRequest): Promise<TokenResponse>;
  /** Lost-response recovery, step 1 (`POST /oauth/operations/lookup`) with the token request's body. */
  lookup(body: TokenRequest): Promise<TokenOperation>;
  /** Lost-response recovery, step 2 (`POST /oauth/operations/recover`): revokes what the operation issued. */
  recover(operationId: string): Promise<OperationRecovery>;
  status(operationId: string): Promise<TokenOperation>;
  /** Checks (and spends) the `svc_launch_token` of a launch URL. */
  verifyLaunch(launch: components['schemas']['LaunchVerifyRequest']): Promise<LaunchVerification>;
}

/** RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic's base64. */
const formEncoded = (value: string): string => encodeURIComponent(value).replace(/%20/g, '+');

export function createOAuthClient(options: OAuthClientOptions): OAuthClient {
  const authorization = `Basic ${btoa(`${formEncoded(options.clientId)}:${formEncoded(options.clientSecret)}`)}`;
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorization: authorization, ...(options.apiVersion === undefined ? {} : { [API_VERSION_HEADER]: options.apiVersion }) },
    fetch: sendingFetch(options, undefined),
  });
  const dataOf = <T>(result: { data?: T }): T => {
    if (result.data === undefined) throw new StoreApiError({ status: 0, code: 'UNEXPECTED_RESPONSE', message: 'The service answered without a body.' });
    return result.data;
  };
  return {
    exchangeCode: async ({ code, redirectUri, codeVerifier }) =>
      dataOf(
        await client.POST('/oauth/token', {
          body: { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: codeVerifier },
        }),
      ),
    token: async (body) => dataOf(await client.POST('/oauth/token', { body })),
    lookup: async (body) => dataOf(await client.POST('/oauth/operations/lookup', { body })),
    recover: async (operationId) => dataOf(await client.POST('/oauth/operations/recover', { body: { operation_id: operationId } })),
    status: async (operationId) => dataOf(await client.POST('/oauth/operations/status', { body: { operation_id: operationId } })),
    verifyLaunch: async (launch) => dataOf(await client.POST('/oauth/launch/verify', { body: launch })),
  };
}
