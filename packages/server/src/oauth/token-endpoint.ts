import { randomUUID } from 'node:crypto';
import { ApiError, type ErrorCode } from '../core/errors';
import { ACCESS_SECONDS } from '../core/limits';
import { ownValue } from '../core/records';
import { checkSecret } from '../credentials/secrets';
import type { Db } from '../db/transactions';
import { inTransaction } from '../db/transactions';
import { findInstallation } from '../platform/installations';
import { storeMigrating } from '../platform/stores';
import { findGrant, type Grant, issuePair, livenessOfToken, liveTokens, operationTokensUsed, revokeGrant, type TokenRow } from '../platform/tokens';
import type { Deps } from '../services/container';
import { type ExpiryRule, LATE_USE_EXPLAINED_MS } from '../services/housekeeping';
import {
  awaitCompletion,
  canonicalBody,
  claimOperation,
  completeOperation,
  type GrantType,
  requestHashOf,
  sealResult,
  sharedResult,
  type TokenOperationRow,
  type TokenRequestBody,
} from './operations';
import { verifierMatches } from './pkce';

export interface TokenResponse {
  access_token: string;
  refresh_token: string;
  token_type: 'Bearer';
  expires_in: typeof ACCESS_SECONDS;
  scope: string;
  store_id: string;
  installation_id: string;
  installation_generation: number;
  grant_revision: number;
  operation_id: string;
}

/** The outcome of the work, committed either way (a refusal may have revoked tokens). */
type Outcome = { ok: true; response: TokenResponse; grant: Grant } | { ok: false; code: ErrorCode; message: string; grant?: Grant | undefined };

const refuse = (code: ErrorCode, message: string, grant?: Grant): Outcome => ({ ok: false, code, message, grant });

const GRANT_KEYS: Record<GrantType, readonly (keyof TokenRequestBody)[]> = {
  authorization_code: ['code', 'redirect_uri', 'code_verifier'],
  refresh_token: ['refresh_token'],
};

/** Checks the body's shape for its grant before anything is looked up (INVALID_GRANT, INVALID_REQUEST). */
function checkGrantShape(body: TokenRequestBody): GrantType {
  const grantType = body.grant_type as GrantType;
  const needed = ownValue(GRANT_KEYS, grantType);
  if (!needed) throw new ApiError('INVALID_GRANT_TYPE', 'grant_type must be authorization_code or refresh_token.');
  const missing = needed.filter((key) => !body[key]);
  if (missing.length > 0) throw new ApiError('INVALID_GRANT', `grant_type=${grantType} needs ${missing.join(', ')}.`);
  const foreign = Object.keys(body).filter((key) => key !== 'grant_type' && !needed.includes(key as keyof TokenRequestBody));
  if (foreign.length > 0) {
    throw new ApiError('INVALID_REQUEST', `grant_type=${grantType} does not take ${foreign.join(', ')}.`, {
      details: foreign.map((key) => ({ location: 'body' as const, field: `/${key}`, message: 'is not a key of this grant' })),
    });
  }
  const presented =
    grantType === 'authorization_code' ? checkSecret('authorizationCode', body.code as string) : checkSecret('refreshToken', body.refresh_token as string);
  if (!presented.ok && presented.reason === 'wrong_prefix') {
    throw new ApiError(
      'INVALID_GRANT',
      grantType === 'authorization_code' ? 'The code does not start with svc_c_.' : 'The refresh token does not start with svc_rt_.',
    );
  }
  return grantType;
}

async function responseFor(
  db: Db,
  grant: Grant,
  operationId: string,
  pair: { accessToken: string; refreshToken: string; scope: string },
): Promise<TokenResponse> {
  const installation = await findInstallation(db, grant.installation_id);
  return {
    access_token: pair.accessToken,
    refresh_token: pair.refreshToken,
    token_type: 'Bearer',
    expires_in: ACCESS_SECONDS,
    scope: pair.scope,
    store_id: grant.store_id,
    installation_id: grant.installation_id,
    installation_generation: installation?.generation ?? grant.generation,
    grant_revision: grant.grant_revision,
    operation_id: operationId,
  };
}

interface CodeRow {
  id: string;
  code_hash: string;
  store_id: string;
  app_id: string;
  version_id: string;
  installation_id: string;
  redirect_uri: string;
  code_challenge: string;
  scopes: string;
  expires_at: number;
  consumed_at: number | null;
  grant_id: string | null;
}

/** A code used a second time: refused, and what its first use issued is revoked (RFC 6749 §4.1.2). */
async function codeReused(trx: Db, now: number, grantId: string | null): Promise<Outcome> {
  if (grantId) await revokeGrant(trx, grantId, now, 'code_reused');
  return refuse('INVALID_CODE', 'The authorization code was used already; the tokens it issued are revoked.');
}

/**
 * A code is refused 120 seconds after it was issued, but a used one is what makes its reuse revoke
 * what it issued: it stays while its grant has a live token. A grant in use (refreshed within 30
 * days) keeps its code for as long; once the grant is revoked or its last token has expired there is
 * nothing left to revoke. Unused codes (no grant) go once their late use has been explained for a day.
 */
export const authorizationCodesExpiry: ExpiryRule = {
  table: 'authorization_codes',
  key: 'id',
  expired: (rows, now, db) =>
    rows
      .where('expires_at', '<=', now - LATE_USE_EXPLAINED_MS)
      .whereNotExists(liveTokens(db, now).where('tokens.grant_id', db.ref('authorization_codes.grant_id'))),
};

async function exchangeCode(trx: Db, now: number, appId: string, operationId: string, body: TokenRequestBody): Promise<Outcome> {
  const presented = checkSecret('authorizationCode', body.code as string);
  const code = presented.ok ? await trx<CodeRow>('authorization_codes').where({ code_hash: presented.hash }).first() : undefined;
  if (!code || code.app_id !== appId) return refuse('INVALID_CODE', 'The authorization code is unknown.');
  if (code.consumed_at !== null) return codeReused(trx, now, code.grant_id);
  if (now >= code.expires_at) return refuse('INVALID_CODE', 'The authorization code has expired (codes live 120 seconds).');
  if (body.redirect_uri !== code.redirect_uri) return refuse('REDIRECT_URI_MISMATCH', 'redirect_uri differs from the one of the authorization request.');
  if (!verifierMatches(body.code_verifier as string, code.code_challenge))
    return refuse('PKCE_MISMATCH', 'The S256 hash of code_verifier does not match code_challenge.');
  const installation = await findInstallation(trx, code.installation_id);
  if (installation?.status !== 'installed') return refuse('INVALID_CODE', 'The app was uninstalled since the code was issued.');
  const consumed = await trx('authorization_codes').where({ id: code.id, consumed_at: null }).update({ consumed_at: now });
  if (consumed !== 1) return codeReused(trx, now, (await trx<CodeRow>('authorization_codes').where({ id: code.id }).first())?.grant_id ?? null);
  const grant: Grant = {
    id: randomUUID(),
    store_id: code.store_id,
    app_id: appId,
    installation_id: installation.id,
    generation: installation.generation,
    grant_revision: installation.grantRevision,
    scopes: code.scopes,
    created_at: now,
    revoked_at: null,
    revoked_reason: null,
  };
  await trx('grants').insert(grant);
  await trx('authorization_codes').where({ id: code.id }).update({ grant_id: grant.id });
  const pair = await issuePair(trx, now, grant, operationId, null);
  return { ok: true, response: await responseFor(trx, grant, operationId, pair), grant };
}

/** The refresh token's grant, if the token is a live one (platform/tokens' rule) of this client. */
async function liveGrantOf(trx: Db, now: number, appId: string, token: TokenRow): Promise<Grant | undefined> {
  const grant = await findGrant(trx, token.grant_id);
  if (!grant || grant.app_id !== appId) return undefined;
  return (await livenessOfToken(trx, token.id, now)) === 'live' ? grant : undefined;
}

/**
 * A refresh token that was exchanged already. While its successor is unused this is a resend
 * (REFRESH_ALREADY_USED, nothing revoked); an older token, or one whose successor was used, is
 * reuse: the whole grant is revoked (TOKEN_REUSE_DETECTED).
 */
async function refreshResent(trx: Db, now: number, token: TokenRow, grant: Grant): Promise<Outcome> {
  const successors = await trx<TokenRow>('tokens').where({ parent_id: token.id });
  const successorOperation = successors[0]?.operation_id;
  const successorUsed = successorOperation === undefined || (await operationTokensUsed(trx, successorOperation));
  if (!successorUsed)
    return refuse('REFRESH_ALREADY_USED', 'This refresh token was exchanged already; look the request up at POST /oauth/operations/lookup.', grant);
  await revokeGrant(trx, grant.id, now, 'token_reuse');
  return refuse('TOKEN_REUSE_DETECTED', 'A refresh token was used again after its successor; every token of the grant is revoked. Authorize again.', grant);
}

async function refresh(trx: Db, now: number, appId: string, operationId: string, body: TokenRequestBody): Promise<Outcome> {
  const presented = checkSecret('refreshToken', body.refresh_token as string);
  const token = presented.ok ? await trx<TokenRow>('tokens').where({ token_hash: presented.hash, kind: 'refresh' }).first() : undefined;
  const grant = token && (await liveGrantOf(trx, now, appId, token));
  if (!token || !grant) return refuse('INVALID_REFRESH_TOKEN', 'The refresh token is unknown, expired, revoked or not this client’s.');
  if (token.consumed_at !== null) return refreshResent(trx, now, token, grant);
  const installation = await findInstallation(trx, grant.installation_id);
  if (installation && installation.grantRevision !== grant.grant_revision) {
    return refuse('RECONSENT_REQUIRED', 'The granted scopes changed since this grant was issued; send the store owner through authorization again.', grant);
  }
  const consumed = await trx('tokens').where({ id: token.id, consumed_at: null, revoked_at: null }).update({ consumed_at: now });
  if (consumed !== 1) return refreshResent(trx, now, token, grant);
  // Rule 1: the access token issued with this refresh token dies at once.
  await trx('tokens').where({ operation_id: token.operation_id, kind: 'access', revoked_at: null }).update({ revoked_at: now });
  const pair = await issuePair(trx, now, grant, operationId, token.id);
  return { ok: true, response: await responseFor(trx, grant, operationId, pair), grant };
}

/** The work of an operation this caller owns: done and recorded in one transaction. */
async function perform({ db, clock }: Deps, appId: string, operation: TokenOperationRow, body: TokenRequestBody, canonical: string): Promise<TokenResponse> {
  const outcome = await inTransaction(db, async (trx) => {
    const now = clock.now();
    const result =
      operation.grant_type === 'authorization_code'
        ? await exchangeCode(trx, now, appId, operation.id, body)
        : await refresh(trx, now, appId, operation.id, body);
    const grant = result.grant;
    await completeOperation(trx, now, operation.id, {
      state: result.ok ? 'SUCCEEDED' : 'FAILED',
      storeId: grant?.store_id,
      installationId: grant?.installation_id,
      grantId: result.ok ? grant?.id : null,
      errorCode: result.ok ? null : result.code,
      sealedResult: result.ok ? sealResult(canonical, operation.id, result.response) : null,
    });
    return result;
  });
  if (!outcome.ok) throw new ApiError(outcome.code, outcome.message);
  return outcome.response;
}

/**
 * An identical request to one already completed: the same pair inside the sharing window, the same
 * refusal for a failed one, and otherwise the resend rules (issued tokens are never sent again).
 */
async function rejoin(
  deps: Deps,
  appId: string,
  operation: TokenOperationRow,
  body: TokenRequestBody,
  canonical: string,
  receivedAt: number,
): Promise<TokenResponse> {
  if (operation.state === 'FAILED') throw new ApiError(operation.error_code ?? 'INVALID_GRANT', 'This request failed before; it fails the same way again.');
  const shared = await sharedResult<TokenResponse>(deps, operation, canonical, receivedAt);
  if (shared) return shared;
  const outcome = await inTransaction(deps.db, async (trx) => {
    const now = deps.clock.now();
    if (operation.grant_type === 'authorization_code') return codeReused(trx, now, operation.grant_id);
    const presented = checkSecret('refreshToken', body.refresh_token as string);
    const token = presented.ok ? await trx<TokenRow>('tokens').where({ token_hash: presented.hash, kind: 'refresh' }).first() : undefined;
    const grant = token && (await liveGrantOf(trx, now, appId, token));
    if (!token || !grant) return refuse('INVALID_REFRESH_TOKEN', 'The refresh token is unknown, expired, revoked or not this client’s.');
    return refreshResent(trx, now, token, grant);
  });
  if (outcome.ok) return outcome.response;
  throw new ApiError(outcome.code, outcome.message);
}

/**
 * While the store a code or refresh token belongs to is moving, the request is refused before it
 * becomes an operation, so the same request succeeds once the move ends.
 */
async function refuseWhileMigrating(db: Db, grantType: GrantType, body: TokenRequestBody): Promise<void> {
  const presented =
    grantType === 'authorization_code' ? checkSecret('authorizationCode', body.code as string) : checkSecret('refreshToken', body.refresh_token as string);
  if (!presented.ok) return;
  const table = grantType === 'authorization_code' ? 'authorization_codes' : 'tokens';
  const column = grantType === 'authorization_code' ? 'code_hash' : 'token_hash';
  const store = await db(`${table} as c`)
    .join('stores as s', 's.id', 'c.store_id')
    .where(`c.${column}`, presented.hash)
    .first<{ routing_state: string } | undefined>('s.routing_state');
  if (store?.routing_state === 'migrating') throw storeMigrating();
}

/** POST /oauth/token for an authenticated client: every request is an operation, identical ones are one. */
export async function requestTokens(deps: Deps, appId: string, body: TokenRequestBody, receivedAt: number = deps.clock.now()): Promise<TokenResponse> {
  const grantType = checkGrantShape(body);
  await refuseWhileMigrating(deps.db, grantType, body);
  const canonical = canonicalBody(body);
  const claim = await claimOperation(deps, appId, grantType, requestHashOf(canonical));
  if (claim.owned) return perform(deps, appId, claim.operation, body, canonical);
  return rejoin(deps, appId, await awaitCompletion(deps, claim.operation), body, canonical, receivedAt);
}
