import type { OperationEntry } from '@svc/contract';
import { ApiError } from '../core/errors';
import { ownValue } from '../core/records';
import { checkSecret } from '../credentials/secrets';
import { fromJsonList } from '../db/json-lists';
import { satisfiesAny } from '../platform/scopes';
import { storeMigrating } from '../platform/stores';
import { effectiveScopes, type TokenLiveness } from '../platform/tokens';

/** Who a valid access token acts for. */
export interface Principal {
  tokenId: string;
  appId: string;
  appName: string;
  appAuthEpoch: number;
  /** The app's pinned date version; null: unpinned. */
  appApiVersion: string | null;
  versionId: string;
  installationId: string;
  installedAt: number;
  generation: number;
  grantRevision: number;
  storeId: string;
  routeEpoch: number;
  /** The grant's scopes still granted to the installation (a narrowed installation narrows at once). */
  scopes: ReadonlySet<string>;
}

/** The token's row with its grant, installation, app and store, as the token's statement reads it (http/first-round-trip.ts). */
export interface TokenContextRow {
  token_id: string;
  token_store_id: string;
  expires_at: number;
  token_revoked_at: number | null;
  first_used_at: number | null;
  grant_revoked_at: number | null;
  grant_generation: number;
  grant_scopes: string;
  installation_id: string;
  installation_status: string;
  installation_generation: number;
  installation_scopes: string;
  installed_at: number;
  grant_revision: number;
  version_id: string;
  app_id: string;
  app_name: string;
  auth_epoch: number;
  app_api_version: string | null;
  routing_state: string;
  route_epoch: number;
}

const unauthenticated = (message: string) => new ApiError('UNAUTHENTICATED', message);

function bearerOf(header: string | undefined): string {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  if (!match) throw unauthenticated('An access token is required: Authorization: Bearer svc_at_…');
  return match[1] as string;
}

/** The hash of the access token the request presents (`Authorization: Bearer svc_at_…`): 401 for anything else. */
export function presentedTokenHash(header: string | undefined): string {
  const presented = checkSecret('accessToken', bearerOf(header));
  if (!presented.ok) throw unauthenticated('The access token is not a store API access token (svc_at_…).');
  return presented.hash;
}

/** A token's row as the request's first round trip read it (http/first-round-trip.ts), with its state at the request's instant. */
export interface JudgedToken {
  readonly row: Readonly<TokenContextRow>;
  readonly liveness: TokenLiveness;
}

/** What the bearer check judges: the presented token's row (none: the token is unknown), the path's store and the instant. */
export interface BearerCase {
  readonly token: JudgedToken | undefined;
  readonly storeId: string;
  readonly now: number;
}

/** A token that lets the request through: who it acts for, and, on its first use, the instant to note as its `first_used_at`. */
export interface Admitted {
  readonly principal: Principal;
  readonly firstUse?: { readonly tokenId: string; readonly at: number };
}

/**
 * The bearer check of a store API request: 401 for anything but a live token of the installation's
 * current generation, 404 STORE_NOT_FOUND for another store's path, 503 while the store moves. A
 * pure judgement: the router read the token's row and spends the quota of a token it admits;
 * scopes are checked after the quota ({@link requireScopes}), so rate limiting comes first.
 */
export function judgeBearer({ token, storeId, now }: BearerCase): Admitted {
  if (!token) throw unauthenticated('The access token is unknown.');
  const { row, liveness } = token;
  if (liveness !== 'live') throw unauthenticated(NOT_LIVE_MESSAGES[liveness]);
  if (row.token_store_id !== storeId) throw new ApiError('STORE_NOT_FOUND', 'The access token is not bound to this store.');
  if (row.routing_state === 'migrating') throw storeMigrating();
  const principal = principalOfRow(row);
  return row.first_used_at === null ? { principal, firstUse: { tokenId: row.token_id, at: now } } : { principal };
}

const NOT_LIVE_MESSAGES = {
  revoked: 'The access token was revoked.',
  expired: 'The access token expired (access tokens live 900 seconds); refresh it.',
  earlier_installation: 'The access token belongs to an earlier installation of the app.',
} as const;

/**
 * Principals already made from token rows: SQLite's reader hands out the same frozen row while
 * nothing is committed (db/sqlite/reader.ts), so the scopes are not parsed again on every request.
 */
const principalsOfRows = new WeakMap<Readonly<TokenContextRow>, Principal>();

function principalOfRow(row: Readonly<TokenContextRow>): Principal {
  const known = principalsOfRows.get(row);
  if (known) return known;
  const principal: Principal = {
    tokenId: row.token_id,
    appId: row.app_id,
    appName: row.app_name,
    appAuthEpoch: row.auth_epoch,
    appApiVersion: row.app_api_version,
    versionId: row.version_id,
    installationId: row.installation_id,
    installedAt: row.installed_at,
    generation: row.installation_generation,
    grantRevision: row.grant_revision,
    storeId: row.token_store_id,
    routeEpoch: row.route_epoch,
    scopes: new Set(effectiveScopes(fromJsonList(row.grant_scopes), fromJsonList(row.installation_scopes))),
  };
  principalsOfRows.set(row, principal);
  return principal;
}

/** 403 INSUFFICIENT_SCOPE: which scopes (`any` of them, or `all`), and how the app gets one, the owner's consent (spec: Forbidden). */
function insufficientScope(needed: readonly string[], which: 'any' | 'all'): ApiError {
  const scopes = needed.length === 1 ? `the scope ${needed[0]}` : `${which === 'any' ? 'one of the scopes' : 'the scopes'} ${needed.join(', ')}`;
  return new ApiError(
    'INSUFFICIENT_SCOPE',
    `This operation needs ${scopes}, which the installation's grant does not hold. The app gets it by sending the store's owner to /oauth/authorize with the scope in scope (its app version must list it); the owner's approval adds it to the grant, and the next token pair holds it.`,
    { required_scopes: [...needed] },
  );
}

/** 403 INSUFFICIENT_SCOPE unless the token holds one of the operation's alternatives, and the scopes of every field sent. */
export function requireScopes(principal: Principal, entry: OperationEntry, body: unknown): void {
  if (!satisfiesAny(principal.scopes, entry.scopes)) throw insufficientScope(entry.scopes.flat(), 'any');
  const fields = body && typeof body === 'object' ? Object.keys(body) : [];
  for (const field of fields) {
    const needed = ownValue(entry.fieldScopes, field);
    if (needed && !needed.every((scope) => principal.scopes.has(scope))) throw insufficientScope(needed, 'all');
  }
}
