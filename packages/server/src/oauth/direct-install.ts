import { randomBytes } from 'node:crypto';
import { isApiError } from '../http/errors';
import type { Deps } from '../platform/deps';
import { PlatformError, findStore } from '../platform/stores';
import { validateAuthorization } from './authorize';
import { answerConsent, rememberAuthorization } from './consent';
import { s256 } from './pkce';
import { type TokenResponse, requestTokens } from './token-endpoint';

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

async function install(
  deps: Deps,
  input: { storeId: string; appId: string; scopes: string[]; redirectUri: string; versionId?: string },
): Promise<TokenResponse> {
  const store = await findStore(deps.db, input.storeId);
  if (!store) throw new PlatformError(`No store ${input.storeId}`);
  const verifier = randomBytes(32).toString('base64url');
  const request = await validateAuthorization(deps, {
    response_type: 'code',
    client_id: input.appId,
    store_id: input.storeId,
    redirect_uri: input.redirectUri,
    state: randomBytes(16).toString('base64url'),
    code_challenge: s256(verifier),
    code_challenge_method: 'S256',
    scope: input.scopes.join(' '),
    ...(input.versionId ? { version_id: input.versionId } : {}),
  });
  const session = `operator:${randomBytes(16).toString('hex')}`;
  const requestId = await rememberAuthorization(deps, session, store.owner_id, request);
  const outcome = await answerConsent(deps, { requestId, sessionHash: session, approve: true, optionalScopesKept: input.scopes });
  if (!outcome.ok) throw new PlatformError(outcome.reason);
  const code = new URL(outcome.location).searchParams.get('code') as string;
  return requestTokens(deps, request.app.id, { grant_type: 'authorization_code', code, redirect_uri: input.redirectUri, code_verifier: verifier });
}
