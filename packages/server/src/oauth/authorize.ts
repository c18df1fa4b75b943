import { ApiError } from '../core/errors';
import { type App, type AppVersion, findApp, findVersion, isAvailableTo, latestVersion } from '../platform/apps';
import { isScope, missingDependency } from '../platform/scopes';
import { findStore, type Store, storeMigrating } from '../platform/stores';
import type { Deps } from '../services/container';

/** The authorization request's parameters once the spec validator has checked their presence and form. */
export interface AuthorizeParameters {
  response_type: 'code';
  client_id: string;
  store_id: string;
  redirect_uri: string;
  state: string;
  code_challenge: string;
  code_challenge_method: 'S256';
  scope: string;
  version_id?: string;
}

/** A request that passed every check: what the consent page shows and the code will be bound to. */
export interface ValidAuthorization {
  store: Store;
  app: App;
  version: AppVersion;
  redirectUri: string;
  state: string;
  codeChallenge: string;
  /** The requested scopes, each once, in the order asked. */
  scopes: string[];
}

/** Splits `scope` on single spaces (RFC 6749 §3.3); an empty item (double space) is malformed. */
export function parseScopeParameter(scope: string): string[] {
  const items = scope.split(' ');
  if (items.some((item) => item === '')) throw new ApiError('INVALID_REQUEST', 'scope must be scopes separated by single spaces.');
  return [...new Set(items)];
}

/** Steps 7 and 8: the version's required scopes, nothing beyond required + optional, every dependency. */
export function checkRequestedScopes(version: AppVersion, requested: readonly string[]): void {
  const unknown = requested.filter((scope) => !isScope(scope));
  if (unknown.length > 0) throw new ApiError('INVALID_SCOPE', `Unknown scope(s): ${unknown.join(' ')}.`);
  const missing = version.requiredScopes.filter((scope) => !requested.includes(scope));
  if (missing.length > 0) throw new ApiError('INVALID_SCOPE', `The app version requires the scope(s) ${missing.join(' ')}.`);
  const allowed = new Set([...version.requiredScopes, ...version.optionalScopes]);
  const beyond = requested.filter((scope) => !allowed.has(scope));
  if (beyond.length > 0) throw new ApiError('INVALID_SCOPE', `The app version does not declare the scope(s) ${beyond.join(' ')}.`);
  const gap = missingDependency(requested);
  if (gap) throw new ApiError('SCOPE_DEPENDENCIES_MUST_BE_VISIBLE', `The scope ${gap.scope} needs ${gap.needs} to be requested too.`);
}

/**
 * Steps 4 to 8 of the authorization checks (1 to 3 are the spec validator's): store, client and
 * version, redirect URI, scopes and their dependencies. Every refusal is JSON from this endpoint:
 * until step 6 passes there is no trusted redirect URI to send anything to.
 */
export async function validateAuthorization(deps: Deps, parameters: AuthorizeParameters): Promise<ValidAuthorization> {
  const scopes = parseScopeParameter(parameters.scope);
  const store = await findStore(deps.db, parameters.store_id);
  if (!store) throw new ApiError('STORE_NOT_FOUND', 'No store has that store_id.');
  if (store.routing_state === 'migrating') throw storeMigrating();
  const app = await findApp(deps.db, parameters.client_id);
  if (!app || !isAvailableTo(app, store.id)) throw new ApiError('INVALID_CLIENT', 'No app with that client_id is available to this store.', { status: 400 });
  const version = parameters.version_id ? await findVersion(deps.db, parameters.version_id) : await latestVersion(deps.db, app.id);
  if (!version || version.appId !== app.id) throw new ApiError('INVALID_CLIENT', 'The app has no such version.', { status: 400 });
  if (!version.redirectUrls.includes(parameters.redirect_uri)) {
    throw new ApiError('REDIRECT_URI_MISMATCH', 'redirect_uri is not a redirect URL registered for this app version (exact match).');
  }
  checkRequestedScopes(version, scopes);
  return { store, app, version, redirectUri: parameters.redirect_uri, state: parameters.state, codeChallenge: parameters.code_challenge, scopes };
}
