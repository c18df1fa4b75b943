import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ACCESS_SECONDS } from '../core/limits';
import { hashSecret, issueSecret } from '../credentials/secrets';
import { fromJsonList } from '../db/json-lists';
import { selectRows } from '../db/reads';
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

/** A token's state, in the order the checks are made (the first that fails is the answer). */
export type TokenLiveness = 'live' | 'revoked' | 'expired' | 'earlier_installation';

/**
 * What decides whether an issued token still works, as columns of one row: the token's own
 * (`token_revoked_at`, `expires_at`), its grant's (`grant_revoked_at`, `grant_generation`) and its
 * installation's (`installation_status`, `installation_generation`, null once it is gone).
 */
export const TOKEN_FACTS_COLUMNS = `t.revoked_at as token_revoked_at, t.expires_at, g.revoked_at as grant_revoked_at, g.generation as grant_generation,
  i.status as installation_status, i.generation as installation_generation`;

/**
 * The one rule for a live token, wherever it is judged (the store API's bearer check, a refresh,
 * introspection): neither it nor its grant revoked, not expired at `:now`, and of the installation's
 * current generation while the app is installed (a reinstall or an uninstall ends every token of
 * the earlier generation). It is SQL over a row (or CTE) `alias` with the facts' columns
 * ({@link TOKEN_FACTS_COLUMNS}), giving the token's {@link TokenLiveness}: so that a statement can
 * judge a token in the database, and spend a quota only for a live one in the same round trip
 * (docs/decisions/0066-postgresql-read-path.md).
 */
export const tokenLivenessSql = (alias: string): string => `case
    when ${alias}.token_revoked_at is not null or ${alias}.grant_revoked_at is not null then 'revoked'
    when ${alias}.expires_at <= :now then 'expired'
    when ${alias}.installation_status is null or ${alias}.installation_status <> 'installed'
      or ${alias}.grant_generation <> ${alias}.installation_generation then 'earlier_installation'
    else 'live' end`;

/**
 * A condition (SQL bound by `:token_hash`, `:store_id` and `:now`) that holds while an access token
 * of that hash, issued for that store, is neither revoked nor expired: the gate of a read made for a
 * bearer token before it is judged (an operation's first read,
 * docs/decisions/0092-no-read-before-the-token.md). It is what the live-token rule
 * ({@link tokenLivenessSql}) asks of the token's own row, so every live token passes it; what only
 * the grant and the installation can say (a revoked grant, an earlier installation) is left to the
 * judgement, which follows. One probe of the token-hash index, where the whole rule took three
 * (the token, its grant, its installation), for every valid read. It holds for a while and then
 * fails for good: a token is never unrevoked, its expiry never moves, nor does its store.
 */
export const ISSUED_ACCESS_TOKEN_OF_STORE_SQL = `exists (select 1 from tokens t
  where t.token_hash = :token_hash and t.kind = 'access' and t.store_id = :store_id and t.revoked_at is null and t.expires_at > :now)`;

const TOKEN_LIVENESS_SQL = `select ${tokenLivenessSql('facts')} as liveness from (
  select ${TOKEN_FACTS_COLUMNS} from tokens t join grants g on g.id = t.grant_id left join installations i on i.id = t.installation_id
  where t.id = :token_id) facts`;

/** The token's state at `now`, judged by the rule in the database; undefined when the token (or its grant) is gone. */
export async function livenessOfToken(db: Db, tokenId: string, now: number): Promise<TokenLiveness | undefined> {
  const [row] = await selectRows<{ liveness: TokenLiveness }>(db, TOKEN_LIVENESS_SQL, { token_id: tokenId, now }, { fresh: true });
  return row?.liveness;
}

/** A token's facts as {@link TOKEN_FACTS_COLUMNS} names them, read already (a kept row). */
export interface TokenFacts {
  readonly token_revoked_at: number | null;
  readonly expires_at: number;
  readonly grant_revoked_at: number | null;
  readonly grant_generation: number;
  readonly installation_status: string | null;
  readonly installation_generation: number | null;
}

const FACTS_LIVENESS_SQL = `select ${tokenLivenessSql('facts')} as liveness from (
  select cast(:token_revoked_at as bigint) as token_revoked_at, cast(:expires_at as bigint) as expires_at,
    cast(:grant_revoked_at as bigint) as grant_revoked_at, cast(:grant_generation as integer) as grant_generation,
    cast(:installation_status as text) as installation_status, cast(:installation_generation as integer) as installation_generation) facts`;

/**
 * The state at `now` of a token whose facts were read already, judged by the same rule in the
 * database: a statement that reads no table (a few microseconds on SQLite, where the bearer check's
 * facts are a kept row; typed, so that PostgreSQL runs it too). Where the facts are still to be read, the rule goes in the statement that
 * reads them (the bearer check on PostgreSQL, {@link livenessOfToken}).
 */
export async function livenessOfFacts(db: Db, facts: TokenFacts, now: number): Promise<TokenLiveness> {
  const { token_revoked_at, expires_at, grant_revoked_at, grant_generation, installation_status, installation_generation } = facts;
  const bindings = { token_revoked_at, expires_at, grant_revoked_at, grant_generation, installation_status, installation_generation, now };
  const [row] = await selectRows<{ liveness: TokenLiveness }>(db, FACTS_LIVENESS_SQL, bindings, { fresh: true });
  if (!row) throw new Error('The liveness rule answered no row');
  return row.liveness;
}

/** What a token may do: its grant's scopes that are still granted to the installation (a narrowed installation narrows at once). */
export function effectiveScopes(grantScopesList: readonly string[], installationScopes: readonly string[]): string[] {
  const granted = new Set(installationScopes);
  return grantScopesList.filter((scope) => granted.has(scope));
}

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

/** An access token's first use, noted once (the first request to note it wins): it shows that the app holds its pair. */
export async function noteFirstUse(db: Db, tokenId: string, at: number): Promise<void> {
  await db('tokens').where({ id: tokenId, first_used_at: null }).update({ first_used_at: at });
}

/** Whether the app has shown that it holds what an operation issued: a token of it used or exchanged. */
export async function operationTokensUsed(db: Db, operationId: string): Promise<boolean> {
  const used = await db('tokens')
    .where({ operation_id: operationId })
    .andWhere((q) => q.whereNotNull('first_used_at').orWhereNotNull('consumed_at'))
    .first('id');
  return used !== undefined;
}
