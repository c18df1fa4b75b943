import { checkSecret } from '../credentials/secrets';
import type { Db } from '../db/transactions';
import { findInstallation, type Installation } from '../platform/installations';
import { findGrant, type Grant, type TokenRow } from '../platform/tokens';

/**
 * A token a client presents to the revocation or introspection endpoint (RFC 7009, RFC 7662): any
 * string, which names a token of this server only when it is a well-formed access (`svc_at_`) or
 * refresh (`svc_rt_`) token. Its prefix is its type, so `token_type_hint` is never needed.
 */
export interface PresentedToken {
  readonly token: TokenRow;
  readonly grant: Grant;
  /** The token's installation; undefined once it is gone. */
  readonly installation: Installation | undefined;
}

/** The body of `POST /oauth/revoke` and `POST /oauth/introspect` (RFC 7009 §2.1, RFC 7662 §2.1). */
export interface PresentedTokenBody {
  token: string;
  /** Ignored: the token's prefix names its type (an unknown hint is not refused, RFC 7009 §2.1). */
  token_type_hint?: string;
}

/** The hash and kind a presented string is looked up by, or undefined when it is no token of this server. */
function lookupKeyOf(presented: string): { hash: string; kind: TokenRow['kind'] } | undefined {
  const access = checkSecret('accessToken', presented);
  if (access.ok) return { hash: access.hash, kind: 'access' };
  const refresh = checkSecret('refreshToken', presented);
  return refresh.ok ? { hash: refresh.hash, kind: 'refresh' } : undefined;
}

/** The token the string names, with its grant and installation; undefined for anything this server did not issue. */
export async function findPresentedToken(db: Db, presented: string): Promise<PresentedToken | undefined> {
  const key = lookupKeyOf(presented);
  if (!key) return undefined;
  const token = await db<TokenRow>('tokens').where({ token_hash: key.hash, kind: key.kind }).first();
  const grant = token && (await findGrant(db, token.grant_id));
  if (!token || !grant) return undefined;
  return { token, grant, installation: await findInstallation(db, grant.installation_id) };
}
