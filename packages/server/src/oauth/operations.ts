import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { toIso } from '../core/clock';
import { ApiError, type ErrorCode } from '../core/errors';
import type { Db } from '../db/transactions';
import { inTransaction } from '../db/transactions';
import { operationTokensUsed, REFRESH_MS, revokeGrant } from '../platform/tokens';
import type { Deps } from '../services/container';
import type { ExpiryRule } from '../services/housekeeping';

export type OperationState = 'IN_PROGRESS' | 'SUCCEEDED' | 'FAILED' | 'RESULT_UNAVAILABLE_REAUTHORIZE' | 'RECOVERED';
export type GrantType = 'authorization_code' | 'refresh_token';

export interface TokenOperationRow {
  id: string;
  app_id: string;
  request_hash: string;
  grant_type: GrantType;
  state: OperationState;
  store_id: string | null;
  installation_id: string | null;
  grant_id: string | null;
  error_code: ErrorCode | null;
  created_at: number;
  completed_at: number | null;
  result_ciphertext: string | null;
  share_until: number | null;
  lease_until: number | null;
  recovered_at: number | null;
  revoked_tokens: number | null;
}

/** The token request's keys, the only ones a token or lookup body may carry. */
export const TOKEN_REQUEST_KEYS = ['grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token'] as const;
export type TokenRequestBody = Partial<Record<(typeof TOKEN_REQUEST_KEYS)[number], string>>;

/**
 * Identical requests that arrive while an operation runs, or this soon after it completed (before
 * any token of the pair was used), are the same request and share its pair. Later resends get the
 * refresh rules' answers: issued tokens are never sent again.
 */
export const SHARE_WINDOW_MS = 2000;
/** An IN_PROGRESS claim not completed within this was abandoned (a crashed instance) and is taken over. */
export const LEASE_MS = 30_000;
/** How long an identical request waits for the running one before giving up. */
export const WAIT_MS = 10_000;
const POLL_MS = 15;

/**
 * An operation that issued tokens (every success: its pair commits with it) is what they name
 * (`tokens.operation_id`), and what recovery, the sharing window and reuse detection read while they
 * exist: it stays as long as its tokens, which housekeeping does not delete. One that issued nothing
 * (FAILED, or IN_PROGRESS abandoned by a crash) gives identical resends and lookups its outcome; once
 * the code or refresh token in its body can no longer be live (a refresh token lives REFRESH_MS from
 * an issue before the operation, a code far less), a fresh run of the same body can only be refused,
 * so it goes REFRESH_MS after it began.
 */
export const tokenOperationsExpiry: ExpiryRule = {
  table: 'token_operations',
  key: 'id',
  expired: (rows, now, db) =>
    rows
      .whereIn('state', ['FAILED', 'IN_PROGRESS'])
      .where('created_at', '<=', now - REFRESH_MS)
      .whereNotExists(db('tokens').select('id').where('tokens.operation_id', db.ref('token_operations.id'))),
};

/** The body in one canonical form, the same for form-encoded and JSON: what identifies a request. */
export function canonicalBody(body: TokenRequestBody): string {
  return JSON.stringify(TOKEN_REQUEST_KEYS.filter((key) => body[key] !== undefined).map((key) => [key, body[key]]));
}

export const requestHashOf = (canonical: string): string => createHash('sha256').update(`token-request\n${canonical}`).digest('hex');

/**
 * The shared result is encrypted with a key derived from the request body itself, which holds the
 * code or refresh token: the database alone (which stores only the body's hash) cannot read it.
 */
function resultKey(canonical: string, operationId: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(canonical), Buffer.from(operationId), 'svc token-operation result', 32));
}

export function sealResult(canonical: string, operationId: string, result: object): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', resultKey(canonical, operationId), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(result), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

export function openResult<T>(canonical: string, operationId: string, ciphertext: string): T {
  const bytes = Buffer.from(ciphertext, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', resultKey(canonical, operationId), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')) as T;
}

export const findOperation = (db: Db, id: string): Promise<TokenOperationRow | undefined> => db<TokenOperationRow>('token_operations').where({ id }).first();

export const findOperationByRequest = (db: Db, appId: string, requestHash: string): Promise<TokenOperationRow | undefined> =>
  db<TokenOperationRow>('token_operations').where({ app_id: appId, request_hash: requestHash }).first();

export type Claim = { owned: true; operation: TokenOperationRow } | { owned: false; operation: TokenOperationRow };

/**
 * Claims the operation for (client, body): exactly one caller across every instance inserts the
 * row (the unique index decides), or takes over a claim whose lease ran out. Everyone else joins.
 */
export async function claimOperation({ db, clock }: Deps, appId: string, grantType: GrantType, requestHash: string): Promise<Claim> {
  const now = clock.now();
  const id = randomUUID();
  await db('token_operations')
    .insert({ id, app_id: appId, request_hash: requestHash, grant_type: grantType, state: 'IN_PROGRESS', created_at: now, lease_until: now + LEASE_MS })
    .onConflict(['app_id', 'request_hash'])
    .ignore();
  const operation = (await findOperationByRequest(db, appId, requestHash)) as TokenOperationRow;
  if (operation.id === id) return { owned: true, operation };
  if (operation.state === 'IN_PROGRESS' && (operation.lease_until ?? 0) <= now) {
    const taken = await db('token_operations')
      .where({ id: operation.id, state: 'IN_PROGRESS', lease_until: operation.lease_until })
      .update({ lease_until: now + LEASE_MS });
    if (taken === 1) return { owned: true, operation: (await findOperation(db, operation.id)) as TokenOperationRow };
  }
  return { owned: false, operation };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (polling the database, so it works across instances) until the operation completes. */
export async function awaitCompletion({ db }: Deps, operation: TokenOperationRow): Promise<TokenOperationRow> {
  const deadline = Date.now() + WAIT_MS;
  let current = operation;
  while (current.state === 'IN_PROGRESS') {
    if (Date.now() > deadline) {
      throw new ApiError('INTERNAL', 'An identical token request is still running; ask POST /oauth/operations/status with its operation_id.');
    }
    await sleep(POLL_MS);
    current = (await findOperation(db, operation.id)) as TokenOperationRow;
  }
  return current;
}

export interface Completion {
  state: 'SUCCEEDED' | 'FAILED';
  storeId?: string | null;
  installationId?: string | null;
  grantId?: string | null;
  errorCode?: ErrorCode | null;
  sealedResult?: string | null;
}

/** Records the outcome, in the transaction that did the work. */
export async function completeOperation(trx: Db, now: number, operationId: string, completion: Completion): Promise<void> {
  await trx('token_operations')
    .where({ id: operationId })
    .update({
      state: completion.state,
      store_id: completion.storeId ?? null,
      installation_id: completion.installationId ?? null,
      grant_id: completion.grantId ?? null,
      error_code: completion.errorCode ?? null,
      result_ciphertext: completion.sealedResult ?? null,
      share_until: completion.sealedResult ? now + SHARE_WINDOW_MS : null,
      completed_at: now,
      lease_until: null,
    });
}

/** The shared pair, while the sharing window is open and no token of it has been used or revoked; else undefined. */
export async function sharedResult<T>({ db, clock }: Deps, operation: TokenOperationRow, canonical: string, receivedAt: number): Promise<T | undefined> {
  if (!operation.result_ciphertext) return undefined;
  const revoked = await db('tokens').where({ operation_id: operation.id }).whereNotNull('revoked_at').first('id');
  // Concurrency is judged by when the request arrived, not when this instance got to it (a cold or
  // busy instance may reach a request of the same burst seconds later).
  const arrivedInTime = receivedAt < (operation.share_until ?? 0) && clock.now() < (operation.share_until ?? 0) + SHARE_WINDOW_MS * 5;
  if (!arrivedInTime || revoked !== undefined || (await operationTokensUsed(db, operation.id))) {
    await db('token_operations').where({ id: operation.id }).update({ result_ciphertext: null });
    return undefined;
  }
  return openResult<T>(canonical, operation.id, operation.result_ciphertext);
}

export type TokenOperation = {
  operation_id: string;
  state: OperationState;
  grant_type: GrantType;
  installation_id: string | null;
  created_at: string;
  completed_at: string | null;
  error_code: ErrorCode | null;
};

export const describeOperation = (operation: TokenOperationRow): TokenOperation => ({
  operation_id: operation.id,
  state: operation.state,
  grant_type: operation.grant_type,
  installation_id: operation.installation_id,
  created_at: toIso(operation.created_at),
  completed_at: operation.completed_at === null ? null : toIso(operation.completed_at),
  error_code: operation.state === 'FAILED' ? operation.error_code : null,
});

const operationNotFound = () => new ApiError('OPERATION_NOT_FOUND', 'This client has no token operation for that request.');

/**
 * Lost-response recovery, step 1. A succeeded operation whose tokens were never used has lost its
 * result: it becomes RESULT_UNAVAILABLE_REAUTHORIZE (409, naming the operation to recover).
 */
export async function lookupOperation(deps: Deps, appId: string, body: TokenRequestBody): Promise<TokenOperation> {
  const operation = await findOperationByRequest(deps.db, appId, requestHashOf(canonicalBody(body)));
  if (!operation) throw operationNotFound();
  const unused = operation.state === 'SUCCEEDED' && !(await operationTokensUsed(deps.db, operation.id));
  if (unused || operation.state === 'RESULT_UNAVAILABLE_REAUTHORIZE') {
    await deps
      .db('token_operations')
      .where({ id: operation.id, state: 'SUCCEEDED' })
      .update({ state: 'RESULT_UNAVAILABLE_REAUTHORIZE', result_ciphertext: null });
    throw new ApiError(
      'RESULT_UNAVAILABLE_REAUTHORIZE',
      'The tokens were issued but never used; they are not sent again. Recover the operation, then authorize again.',
      {
        operation_id: operation.id,
      },
    );
  }
  return describeOperation(operation);
}

export async function operationStatus({ db }: Deps, appId: string, operationId: string): Promise<TokenOperation> {
  const operation = await findOperation(db, operationId);
  if (!operation || operation.app_id !== appId) throw operationNotFound();
  return describeOperation(operation);
}

export interface Recovery {
  operation_id: string;
  state: 'RECOVERED';
  revoked_tokens: number;
  recovered_at: string;
}

/** Lost-response recovery, step 2: revokes the operation's grant (its tokens and their successors). */
export async function recoverOperation({ db, clock }: Deps, appId: string, operationId: string): Promise<Recovery> {
  return inTransaction(db, async (trx) => {
    const operation = await findOperation(trx, operationId);
    if (!operation || operation.app_id !== appId) throw operationNotFound();
    if (operation.state === 'IN_PROGRESS' || operation.state === 'FAILED') {
      throw new ApiError(
        'INVALID_REQUEST',
        `An operation that is ${operation.state} cannot be recovered${operation.state === 'FAILED' ? ': it issued nothing' : '; ask its status until it completes'}.`,
      );
    }
    if (operation.state !== 'RECOVERED') {
      const now = clock.now();
      const revoked = operation.grant_id ? await revokeGrant(trx, operation.grant_id, now, 'recovered') : 0;
      await trx('token_operations')
        .where({ id: operationId })
        .update({ state: 'RECOVERED', recovered_at: now, revoked_tokens: revoked, result_ciphertext: null });
    }
    const recovered = (await findOperation(trx, operationId)) as TokenOperationRow;
    return {
      operation_id: recovered.id,
      state: 'RECOVERED',
      revoked_tokens: recovered.revoked_tokens ?? 0,
      recovered_at: toIso(recovered.recovered_at ?? 0),
    };
  });
}
