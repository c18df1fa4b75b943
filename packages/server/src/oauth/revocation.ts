import { ApiError } from '../core/errors';
import { inTransaction } from '../db/transactions';
import { findStore, storeMigrating } from '../platform/stores';
import { revokeGrant } from '../platform/tokens';
import type { Deps } from '../services/container';
import { findPresentedToken, type PresentedTokenBody } from './presented-tokens';

/** Why a grant ended when its app revoked a refresh token of it (`grants.revoked_reason`). */
export const REVOKED_BY_CLIENT = 'revoked_by_client';

/**
 * RFC 7009 for the authenticated client (docs/decisions/0071-oauth-standard-endpoints.md).
 * A refresh token ends its grant: itself, its successors and every access token of the grant. An
 * access token ends itself only. Nothing else changes: the installation stays installed and no
 * `app.uninstalled` event is written. A string that names no token still in force (unknown,
 * expired, revoked already) changes nothing and is answered as a success (§2.2). A token in force
 * that was issued to another client is refused, INVALID_REQUEST, and left alone (§2.1; what
 * node-oidc-provider answers). While the token's store is moving: STORE_MIGRATING, nothing revoked.
 */
export async function revokeToken({ db, clock }: Deps, appId: string, body: PresentedTokenBody): Promise<void> {
  await inTransaction(db, async (trx) => {
    const found = await findPresentedToken(trx, body.token);
    const now = clock.now();
    if (!found || found.token.revoked_at !== null || found.grant.revoked_at !== null || now >= found.token.expires_at) return;
    if (found.grant.app_id !== appId) {
      throw new ApiError('INVALID_REQUEST', 'The token was issued to another client; a client may revoke only its own tokens.');
    }
    if ((await findStore(trx, found.token.store_id))?.routing_state === 'migrating') throw storeMigrating();
    if (found.token.kind === 'refresh') await revokeGrant(trx, found.grant.id, now, REVOKED_BY_CLIENT);
    else await trx('tokens').where({ id: found.token.id, revoked_at: null }).update({ revoked_at: now });
  });
}
