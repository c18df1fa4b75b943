import { randomBytes } from 'node:crypto';
import { isApiError } from '../core/errors';
import { findStore, PlatformError } from '../platform/stores';
import { DEFAULT_ISSUER, type Deps } from '../services/container';
import { validateAuthorization } from './authorize';
import { answerConsent, rememberAuthorization } from './consent';
import { s256 } from './pkce';
import { requestTokens, type TokenResponse } from './token-endpoint';

/**
 * The operator installs an app for a store's owner and receives its first token pair, through the
 * same checks, consent record, code and token exchange as the browser flow (the way a platform
 * admin installs a custom app). For local work and demos: an app normally goes through authorize.
 */
export async function installDirectly(
  deps: Deps,
  input: { storeId: string; appId: string; scopes: string[]; redirectUri: string; versionId?: string },
): Promise<TokenResponse> {
  try {
    return await install(deps, input);
  } catch (error) {
    // The checks of the browser flow refuse with the interface's codes; an operator reads them as such.
    if (isApiError(error)) throw new PlatformError(`${error.code}: ${error.message}`);
    throw error;
  }
}

export interface OwnerApproval {
  storeId: string;
  appId: string;
  scopes: string[];
  redirectUri: string;
  codeChallenge: string;
  versionId?: string;
}

/**
 * The store's owner approves an authorization request (every check of authorize, the consent record,
 * the installation) and the code is returned instead of redirected. Refusals are the interface's
 * ApiErrors.
 */
export async function approveAsOwner(deps: Deps & { readonly issuer?: string }, approval: OwnerApproval): Promise<string> {
  const store = await findStore(deps.db, approval.storeId);
  if (!store) throw new PlatformError(`No store ${approval.storeId}`);
  const request = await validateAuthorization(deps, {
    response_type: 'code',
    client_id: approval.appId,
    store_id: approval.storeId,
    redirect_uri: approval.redirectUri,
    state: randomBytes(16).toString('base64url'),
    code_challenge: approval.codeChallenge,
    code_challenge_method: 'S256',
    scope: approval.scopes.join(' '),
    ...(approval.versionId ? { version_id: approval.versionId } : {}),
  });
  const session = `operator:${randomBytes(16).toString('hex')}`;
  const requestId = await rememberAuthorization(deps, session, store.owner_id, request);
  // The redirect is read here, not followed: its `iss` is the services' issuer when they have one.
  const issuer = deps.issuer ?? DEFAULT_ISSUER;
  const outcome = await answerConsent(deps, { requestId, sessionHash: session, approve: true, optionalScopesKept: approval.scopes, issuer });
  if (!outcome.ok) throw new PlatformError(outcome.reason);
  return new URL(outcome.location).searchParams.get('code') as string;
}

async function install(
  deps: Deps,
  input: { storeId: string; appId: string; scopes: string[]; redirectUri: string; versionId?: string },
): Promise<TokenResponse> {
  const verifier = randomBytes(32).toString('base64url');
  const code = await approveAsOwner(deps, { ...input, codeChallenge: s256(verifier) });
  return requestTokens(deps, input.appId, { grant_type: 'authorization_code', code, redirect_uri: input.redirectUri, code_verifier: verifier });
}
