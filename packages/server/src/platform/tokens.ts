import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ACCESS_SECONDS } from '../core/limits';
import { hashSecret, issueSecret } from '../credentials/secrets';
import { fromJsonList } from '../db/json-lists';
import type { Db } from '../db/transactions';

/** A refresh token lives 30 days from the refresh that issued it. */
export const REFRESH_MS = 30 * 24 * 60 * 60 * 1000;

export interface Grant {
  id: string;
  store_id: string;
  app_id: string;
  installation_id: string;
  generation: number;
  grant_revision: number;
  scopes: string;
  created_at: number;
  revoked_at: number | null;
  revoked_reason: string | null;
}

export interface TokenRow {
  id: string;
  kind: 'access' | 'refresh';
  token_hash: string;
  grant_id: string;
  store_id: string;
  installation_id: string;
  operation_id: string;
  parent_id: string | null;
  expires_at: number;
  first_used_at: number | null;
  consumed_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

export interface IssuedPair {
  accessToken: string;
  refreshToken: string;
  scope: string;
}

export const grantScopes = (grant: Grant): string[] => fromJsonList(grant.scopes);

export const findGrant = (db: Db, id: string): Promise<Grant | undefined> => db<Grant>('grants').where({ id }).first();

/** Issues an access and a refresh token for a grant; only their hashes are stored. */
export async function issuePair(trx: Db, now: number, grant: Grant, operationId: string, parentId: string | null): Promise<IssuedPair> {
  const accessToken = issueSecret('accessToken');
  const refreshToken = issueSecret('refreshToken');
  const common = {
    grant_id: grant.id,
    store_id: grant.store_id,
    installation_id: grant.installation_id,
    operation_id: operationId,
    parent_id: parentId,
    created_at: now,
  };
  await trx('tokens').insert([
    { ...common, id: randomUUID(), kind: 'access', token_hash: hashSecret(accessToken), expires_at: now + ACCESS_SECONDS * 1000 },
    { ...common, id: randomUUID(), kind: 'refresh', token_hash: hashSecret(refreshToken), expires_at: now + REFRESH_MS },
  ]);
  return { accessToken, refreshToken, scope: grantScopes(grant).join(' ') };
}

/** The tokens a revocation would still stop at `now`: neither revoked, exchanged nor expired. */
export const liveTokens = (db: Knex, now: number): Knex.QueryBuilder =>
  db('tokens').select('id').whereNull('revoked_at').whereNull('consumed_at').where('expires_at', '>', now);

/** What a revocation covers: one grant, or every grant of an installation. */
export type RevocationScope = { grantId: string } | { installationId: string };

/**
 * Revokes every token and grant in scope, and forgets any pair still shared with identical
 * resends; how many tokens were still active (unexpired, unexchanged).
 */
export async function revokeTokens(trx: Db, scope: RevocationScope, now: number, reason: string): Promise<number> {
  const byGrant = 'grantId' in scope;
  const tokens = byGrant ? { grant_id: scope.grantId } : { installation_id: scope.installationId };
  const active = await trx('tokens')
    .where({ ...tokens, revoked_at: null, consumed_at: null })
    .andWhere('expires_at', '>', now)
    .update({ revoked_at: now });
  await trx('tokens')
    .where({ ...tokens, revoked_at: null })
    .update({ revoked_at: now });
  await trx('grants')
    .where({ ...(byGrant ? { id: scope.grantId } : tokens), revoked_at: null })
    .update({ revoked_at: now, revoked_reason: reason });
  await trx('token_operations').where(tokens).whereNotNull('result_ciphertext').update({ result_ciphertext: null });
  return active;
}

export const revokeGrant = (trx: Db, grantId: string, now: number, reason: string): Promise<number> => revokeTokens(trx, { grantId }, now, reason);

/** Whether the app has shown that it holds what an operation issued: a token of it used or exchanged. */
export async function operationTokensUsed(db: Db, operationId: string): Promise<boolean> {
  const used = await db('tokens')
    .where({ operation_id: operationId })
    .andWhere((q) => q.whereNotNull('first_used_at').orWhereNotNull('consumed_at'))
    .first('id');
  return used !== undefined;
}
