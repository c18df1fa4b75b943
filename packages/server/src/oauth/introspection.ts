import type { components } from '@svc/contract';
import type { Db } from '../db/transactions';
import { effectiveScopes, grantScopes, livenessOfToken } from '../platform/tokens';
import type { Deps } from '../services/container';
import { findPresentedToken, type PresentedToken, type PresentedTokenBody } from './presented-tokens';

export type TokenIntrospection = components['schemas']['TokenIntrospection'];

/** The answer for anything but a live token of the calling client: it says nothing more (RFC 7662 §2.2). */
export const INACTIVE: TokenIntrospection = { active: false };

const seconds = (ms: number): number => Math.floor(ms / 1000);

/**
 * Whether the token works now, for the client it was issued to: an access token when the store API
 * would let it through (the liveness rule of platform/tokens, which the bearer check uses), a
 * refresh token when the token endpoint would exchange it (live, not exchanged already, and of the
 * installation's current grant revision, else the refresh is RECONSENT_REQUIRED).
 */
async function isActiveFor(db: Db, found: PresentedToken, appId: string, now: number): Promise<boolean> {
  const { token, grant, installation } = found;
  if (grant.app_id !== appId || (await livenessOfToken(db, token.id, now)) !== 'live') return false;
  return token.kind === 'access' || (token.consumed_at === null && installation?.grantRevision === grant.grant_revision);
}

/**
 * RFC 7662 for the authenticated client (docs/decisions/0071-oauth-standard-endpoints.md):
 * its own live tokens only, `{active: false}` for anything else. Reads only: introspecting a token
 * is not using it.
 */
export async function introspectToken(deps: Deps & { readonly issuer: string }, appId: string, body: PresentedTokenBody): Promise<TokenIntrospection> {
  const found = await findPresentedToken(deps.db, body.token);
  if (!found?.installation || !(await isActiveFor(deps.db, found, appId, deps.clock.now()))) return INACTIVE;
  const { token, grant, installation } = found;
  const access = token.kind === 'access';
  const scopes = access ? effectiveScopes(grantScopes(grant), installation.scopes) : grantScopes(grant);
  return {
    active: true,
    scope: scopes.join(' '),
    client_id: grant.app_id,
    ...(access ? { token_type: 'Bearer' as const } : {}),
    exp: seconds(token.expires_at),
    iat: seconds(token.created_at),
    iss: deps.issuer,
    sub: token.store_id,
    ...(access ? { aud: `${deps.issuer}/stores/${token.store_id}/v1` } : {}),
    store_id: token.store_id,
    installation_id: token.installation_id,
    installation_generation: installation.generation,
  };
}
