import { randomUUID } from 'node:crypto';
import { hashSecret, issueSecret } from '../credentials/secrets';
import { fromJsonList, toJsonList } from '../db/json-lists';
import type { Db } from '../db/transactions';
import { inTransaction } from '../db/transactions';
import { findVersion } from '../platform/apps';
import { recordConsent } from '../platform/installations';
import { sortScopes, withDependenciesMet } from '../platform/scopes';
import type { Deps } from '../services/container';
import { type ExpiryRule, expiresAtRule, LATE_USE_EXPLAINED_MS } from '../services/housekeeping';
import type { ValidAuthorization } from './authorize';

/** An authorization code lives 120 seconds (the interface: at most 2 minutes). */
export const CODE_MS = 120_000;
/** The consent page may be answered within 10 minutes. */
export const CONSENT_MS = 10 * 60 * 1000;

/** An expired consent request is refused either way; kept a while longer so that a late answer is told why. */
export const authorizationRequestsExpiry: ExpiryRule = expiresAtRule('authorization_requests', 'id', LATE_USE_EXPLAINED_MS);

interface AuthorizationRequestRow {
  id: string;
  session_hash: string;
  owner_id: string;
  store_id: string;
  app_id: string;
  version_id: string;
  redirect_uri: string;
  state: string;
  code_challenge: string;
  scopes: string;
  expires_at: number;
  decided_at: number | null;
  created_at: number;
}

/** Remembers a checked authorization request for the consent page's answer, bound to the session that saw it. */
export async function rememberAuthorization({ db, clock }: Deps, sessionHash: string, ownerId: string, request: ValidAuthorization): Promise<string> {
  const id = randomUUID();
  const now = clock.now();
  await db('authorization_requests').insert({
    id,
    session_hash: sessionHash,
    owner_id: ownerId,
    store_id: request.store.id,
    app_id: request.app.id,
    version_id: request.version.id,
    redirect_uri: request.redirectUri,
    state: request.state,
    code_challenge: request.codeChallenge,
    scopes: toJsonList(request.scopes),
    expires_at: now + CONSENT_MS,
    created_at: now,
  });
  return id;
}

export type ConsentAnswer = {
  requestId: string;
  sessionHash: string;
  approve: boolean;
  optionalScopesKept: readonly string[];
  /** The issuer (`PUBLIC_URL`), sent back as `iss` on the redirect (RFC 9207). */
  issuer: string;
};

export type ConsentOutcome = { ok: true; location: string } | { ok: false; reason: string };

const redirectTo = (redirectUri: string, parameters: Record<string, string>): string => {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
  return url.toString();
};

async function issueCode(trx: Db, now: number, request: AuthorizationRequestRow, installationId: string, scopes: string[]): Promise<string> {
  const code = issueSecret('authorizationCode');
  await trx('authorization_codes').insert({
    id: randomUUID(),
    code_hash: hashSecret(code),
    store_id: request.store_id,
    app_id: request.app_id,
    version_id: request.version_id,
    installation_id: installationId,
    redirect_uri: request.redirect_uri,
    code_challenge: request.code_challenge,
    scopes: toJsonList(scopes),
    expires_at: now + CODE_MS,
    created_at: now,
  });
  return code;
}

/**
 * The store owner's answer. Approval installs the app (or updates its grant) with the required
 * scopes plus the optional ones kept, and redirects with a code; denial redirects with
 * `error=access_denied`. Both carry `state` back unchanged and `iss`, the issuer (RFC 9207: the
 * redirect URI is trusted by now, so the app learns which server answered and can refuse a mix-up).
 */
export async function answerConsent({ db, clock }: Deps, answer: ConsentAnswer): Promise<ConsentOutcome> {
  return inTransaction(db, async (trx) => {
    const request = await trx<AuthorizationRequestRow>('authorization_requests').where({ id: answer.requestId }).first();
    const now = clock.now();
    if (!request || request.session_hash !== answer.sessionHash) return { ok: false, reason: 'This consent request is unknown.' };
    if (request.decided_at !== null) return { ok: false, reason: 'This consent request was answered already.' };
    if (now >= request.expires_at) return { ok: false, reason: 'This consent request expired; start again from the app.' };
    const decided = await trx('authorization_requests').where({ id: request.id, decided_at: null }).update({ decided_at: now });
    if (decided !== 1) return { ok: false, reason: 'This consent request was answered already.' };
    if (!answer.approve) {
      return { ok: true, location: redirectTo(request.redirect_uri, { error: 'access_denied', state: request.state, iss: answer.issuer }) };
    }
    const version = await findVersion(trx, request.version_id);
    const requested = fromJsonList(request.scopes);
    const kept = new Set(answer.optionalScopesKept);
    const scopes = sortScopes(withDependenciesMet(requested.filter((scope) => version?.requiredScopes.includes(scope) || kept.has(scope))));
    const installation = await recordConsent(trx, now, { storeId: request.store_id, appId: request.app_id, versionId: request.version_id, scopes });
    const code = await issueCode(trx, now, request, installation.id, scopes);
    return { ok: true, location: redirectTo(request.redirect_uri, { code, state: request.state, iss: answer.issuer }) };
  });
}
