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
export type AuthorizationServerMetadata = components['schemas']['AuthorizationServerMetadata'];
export type TokenIntrospection = components['schemas']['TokenIntrospection'];

/** The `token_type_hint` values of revocation and introspection (the service needs none: a token's prefix names its type). */
export type TokenTypeHint = 'access_token' | 'refresh_token';

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
  /**
   * Revokes a token (`POST /oauth/revoke`, RFC 7009): a refresh token ends its whole grant, an
   * access token itself only. Resolves for a token that is unknown, expired or revoked already;
   * does not uninstall the app.
   */
  revoke(token: string, tokenTypeHint?: TokenTypeHint): Promise<void>;
  /** What the service knows of one of this app's tokens (`POST /oauth/introspect`, RFC 7662); `{active: false}` for anything else. */
  introspect(token: string, tokenTypeHint?: TokenTypeHint): Promise<TokenIntrospection>;
  /** The service's metadata (`GET /.well-known/oauth-authorization-server`, RFC 8414): its issuer and endpoints. */
  metadata(): Promise<AuthorizationServerMetadata>;
}

/**
 * Why an authorization callback was refused. Answer the browser with an error page and start again;
 * never exchange a code from a refused callback.
 *
 * - `ISSUER_MISMATCH`: `iss` names another authorization server than the one the authorization
 *   started at (RFC 9207: a mix-up attack, or a misconfigured issuer).
 * - `ISSUER_MISSING`: no `iss`, though the server says it always sends one.
 * - `STATE_MISMATCH`: `state` is missing or not the one stored for this browser (RFC 6749 §10.12).
 * - `ACCESS_DENIED`: the store owner denied the request (`error=access_denied`).
 * - `AUTHORIZATION_ERROR`: another `error` parameter.
 * - `CODE_MISSING`: neither `code` nor `error`.
 */
export type CallbackRefusal = 'ISSUER_MISMATCH' | 'ISSUER_MISSING' | 'STATE_MISMATCH' | 'ACCESS_DENIED' | 'AUTHORIZATION_ERROR' | 'CODE_MISSING';

/**
 * An authorization callback the app must not act on. Its own class rather than a `StoreApiError`:
 * the browser brought it, nothing was asked of the service.
 */
export class AuthorizationCallbackError extends Error {
  override readonly name: string = 'AuthorizationCallbackError';
  readonly reason: CallbackRefusal;

  constructor(reason: CallbackRefusal, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** What the callback must match: what the app stored when it sent the browser to authorize. */
export interface CallbackExpectations {
  /** The `state` stored with the PKCE verifier for this browser. */
  state: string;
  /**
   * The issuer the authorization started at: the `issuer` of the service's metadata document
   * (`PUBLIC_URL`). When given, the callback's `iss` must equal it (RFC 9207).
   */
  issuer?: string;
  /**
   * Whether the server says it always sends `iss` (the metadata's
   * `authorization_response_iss_parameter_supported`): a callback without `iss` is then refused.
   * Defaults to true when `issuer` is given (this service always sends it).
   */
  issuerParameterSupported?: boolean;
}

/** A callback that passed: the code to exchange, and the `iss` it carried. */
export interface AuthorizationCallback {
  code: string;
  state: string;
  iss: string | undefined;
}

/**
 * Reads the authorization response at the app's redirect URI (the full URL, or its query) and
 * checks it before any use, in RFC 9207's order: `iss` first (when the issuer is given), then
 * `state`, then the outcome. Throws {@link AuthorizationCallbackError} for anything the app must
 * not act on; otherwise the code, to exchange with {@link OAuthClient.exchangeCode}.
 */
export function readAuthorizationCallback(callback: string | URL | URLSearchParams, expected: CallbackExpectations): AuthorizationCallback {
  const query = callback instanceof URLSearchParams ? callback : new URL(callback, 'http://callback.invalid').searchParams;
  const single = (name: string): string | undefined => (query.getAll(name).length === 1 ? (query.get(name) ?? undefined) : undefined);
  const iss = single('iss');
  if (expected.issuer !== undefined) {
    if (iss === undefined && query.has('iss')) throw new AuthorizationCallbackError('ISSUER_MISMATCH', 'The callback carries iss more than once.');
    if (iss !== undefined && iss !== expected.issuer) {
      throw new AuthorizationCallbackError(
        'ISSUER_MISMATCH',
        `The callback's iss (${iss}) is not the issuer the authorization started at (${expected.issuer}).`,
      );
    }
    if (iss === undefined && (expected.issuerParameterSupported ?? true)) {
      throw new AuthorizationCallbackError('ISSUER_MISSING', `The callback carries no iss, though ${expected.issuer} always sends one.`);
    }
  }
  const state = single('state');
  if (state === undefined || state !== expected.state)
    throw new AuthorizationCallbackError('STATE_MISMATCH', 'The callback’s state is not the one stored for this browser.');
  const error = single('error');
  if (error === 'access_denied') throw new AuthorizationCallbackError('ACCESS_DENIED', 'The store owner denied the authorization request.');
  if (query.has('error')) throw new AuthorizationCallbackError('AUTHORIZATION_ERROR', `The authorization failed: ${query.get('error')}.`);
  const code = single('code');
  if (code === undefined || code === '') throw new AuthorizationCallbackError('CODE_MISSING', 'The callback carries no code.');
  return { code, state, iss };
}

/** RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic's base64. */
const formEncoded = (value: string): string => encodeURIComponent(value).replace(/%20/g, '+');

const tokenBody = (token: string, tokenTypeHint: TokenTypeHint | undefined) =>
  tokenTypeHint === undefined ? { token } : { token, token_type_hint: tokenTypeHint };

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
    revoke: async (token, tokenTypeHint) => {
      await client.POST('/oauth/revoke', { body: tokenBody(token, tokenTypeHint) });
    },
    introspect: async (token, tokenTypeHint) => dataOf(await client.POST('/oauth/introspect', { body: tokenBody(token, tokenTypeHint) })),
    metadata: async () => dataOf(await client.GET('/.well-known/oauth-authorization-server')),
  };
}
