import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ApiError, type ErrorCode, type ErrorExtras, isApiError } from '../core/errors';
import { isSealed, type Sealer, UnreadableSealedValue } from '../credentials/sealing';
import { lockForTransaction } from '../db/locks';
import { inTransaction } from '../db/transactions';
import type { Deps } from '../services/container';
import { type ExpiryRule, expiresAtRule } from '../services/housekeeping';
import type { SealedColumn } from '../services/sealing-key';
import { UNAVAILABLE_RETRY_SECONDS } from './error-mapper';

/** A key's first response is replayed this long; after it the key counts as never used. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A claim not completed within this was abandoned (a crashed instance) and may be taken over. */
export const IDEMPOTENCY_LEASE_MS = 60_000;
/** The response header that marks a replay. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

export interface IdempotencyScope {
  /** The installation's store: the table's key leads with it (sharding by store). */
  storeId: string;
  installationId: string;
  /** The operation's operationId (`products.create`, …). */
  operationId: string;
  /** The `Idempotency-Key` header (1 to 128 characters). */
  key: string;
  /** `requestHashOf(method, path, body)`. */
  requestHash: string;
}

export interface WorkResponse<T> {
  status: number;
  body: T;
  headers?: Record<string, string>;
}

export interface IdempotentResponse<T> {
  status: number;
  body: T;
  headers: Record<string, string>;
  /** True when this is the stored response of an earlier request: send `Idempotent-Replayed: true`. */
  replayed: boolean;
}

/** What `response_body` holds: the response, or the ApiError the work threw. */
type StoredOutcome<T> = { kind: 'response'; body: T } | { kind: 'error'; code: ErrorCode; message: string; extras: ErrorExtras };

interface IdempotencyRow {
  store_id: string;
  id: string;
  request_hash: string;
  state: 'in_progress' | 'completed';
  response_status: number | null;
  response_headers: string | null;
  response_body: string | null;
  lease_until: number | null;
  expires_at: number;
}

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** JSON with every object's keys sorted (recursively): equal bodies have one form. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value === undefined ? null : (JSON.parse(JSON.stringify(value)) as JsonValue)));
}

function sortKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  // fromEntries defines each key as its own property, so a `__proto__` key is kept like any other.
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((name) => [name, sortKeys(value[name] as JsonValue)]),
  );
}

/** What identifies a request for its key: SHA-256 (hex) of method, path and canonical body. */
export function requestHashOf(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`idempotent-request\n${method.toUpperCase()}\n${path}\n${canonicalJson(body)}`)
    .digest('hex');
}

/** A row by its whole key (store, id, expiry): on PostgreSQL it is found in one partition's key index. */
interface KeyRow {
  readonly store_id: string;
  readonly id: string;
  readonly expires_at: number;
}

/** Our claim on a key: the row's key, and the lease that makes the claim ours until it ends. */
interface OwnedClaim {
  readonly row: KeyRow;
  readonly leaseUntil: number;
}

type Claim = ({ owned: true } & OwnedClaim) | { owned: false; row: IdempotencyRow };

const inProgress = () => new ApiError('IDEMPOTENCY_KEY_IN_PROGRESS', 'A request with this Idempotency-Key is still being processed; retry later.');
const reused = () => new ApiError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request; use a new key.');

const keyOf = (row: KeyRow): KeyRow => ({ store_id: row.store_id, id: row.id, expires_at: row.expires_at });

/**
 * Claims the key, in a transaction that holds a lock on it (db/locks: on PostgreSQL an advisory
 * lock on the key's hash) while it reads the key's live row and writes its own or takes over an
 * abandoned claim (its lease ran out). The lock is what keeps a key to one live row: on
 * PostgreSQL the table is partitioned by `expires_at` (docs/decisions/0080-partitions-by-time.md),
 * and a unique index cannot span partitions, so two uses a midnight apart would otherwise both
 * insert. A row past its expiry counts as never used: it is left to housekeeping. Anyone else gets
 * the live row as it stands.
 */
function claim({ db, clock }: Deps, scope: IdempotencyScope): Promise<Claim> {
  return inTransaction(db, async (trx) => {
    await lockForTransaction(trx, `idempotency-key:${scope.installationId}:${scope.operationId}:${scope.key}`);
    const now = clock.now();
    const leaseUntil = now + IDEMPOTENCY_LEASE_MS;
    const row: IdempotencyRow | undefined = await trx('idempotency_keys')
      .where({ store_id: scope.storeId, installation_id: scope.installationId, operation_id: scope.operationId, idempotency_key: scope.key })
      // Only the live row, which also leaves out the partitions of the days already past.
      .where('expires_at', '>', now)
      .first();
    if (!row) {
      const made = { store_id: scope.storeId, id: randomUUID(), expires_at: now + IDEMPOTENCY_TTL_MS };
      const key = { installation_id: scope.installationId, operation_id: scope.operationId, idempotency_key: scope.key };
      const insert = () =>
        trx('idempotency_keys')
          .insert({ ...made, ...key, request_hash: scope.requestHash, state: 'in_progress', lease_until: leaseUntil, created_at: now })
          .onConflict()
          .ignore()
          .returning('id');
      if ((await insert()).length === 0) {
        // Until migration 019's contract phase the table keeps its unique key (the previous release
        // upserts by it), and an expired row of this key, not swept yet, holds it: it counts as never used.
        await trx('idempotency_keys').where(key).where('expires_at', '<=', now).delete();
        if ((await insert()).length === 0) throw inProgress();
      }
      return { owned: true, row: made, leaseUntil };
    }
    if (row.request_hash !== scope.requestHash) throw reused();
    if (row.state === 'in_progress' && (row.lease_until ?? 0) <= now) {
      await trx('idempotency_keys').where(keyOf(row)).update({ lease_until: leaseUntil });
      return { owned: true, row: keyOf(row), leaseUntil };
    }
    return { owned: false, row };
  });
}

/**
 * The stored outcome is sealed when a sealer is given (the app always gives one): an answer may hold
 * a secret shown once (a webhook signing secret), and one rule for every answer needs no list of
 * which answers do. Rows written before sealing are plain JSON and still read.
 */
const answerPurpose = (id: string) => `idempotent-answer:${id}`;

function storedOutcomeText(sealer: Sealer | undefined, id: string, outcome: StoredOutcome<unknown>): string {
  const json = JSON.stringify(outcome);
  return sealer ? sealer.seal(json, answerPurpose(id)) : json;
}

/**
 * A stored answer that no key of this instance opens (sealed under a key dropped before `svc secrets
 * reseal` finished, or by an instance whose rollout to the new keys is still under way) is this
 * instance's fault, not the client's: 503, so the client retries (another instance, or this one once
 * its keys are mended, answers the replay). Running the work again instead would do it twice.
 */
const answerUnreadable = () =>
  new ApiError('SERVICE_UNAVAILABLE', 'The stored answer to this Idempotency-Key cannot be read by this instance right now; retry shortly.', {
    retry_after_seconds: UNAVAILABLE_RETRY_SECONDS,
  });

function storedOutcomeOf<T>(sealer: Sealer | undefined, row: IdempotencyRow): StoredOutcome<T> {
  const stored = row.response_body as string;
  if (!isSealed(stored)) return JSON.parse(stored) as StoredOutcome<T>;
  if (!sealer) throw new Error('A sealed idempotent answer cannot be read without the secret key');
  try {
    return JSON.parse(sealer.open(stored, answerPurpose(row.id))) as StoredOutcome<T>;
  } catch (error) {
    if (error instanceof UnreadableSealedValue) throw answerUnreadable();
    throw error;
  }
}

/** What runIdempotently works with: the database, the clock and, to seal stored answers, the sealer. */
export type IdempotencyDeps = Deps & { readonly sealer?: Sealer };

/** Marks our claim completed with the outcome; false when the claim was lost (its lease was taken over). */
async function complete(
  sealer: Sealer | undefined,
  db: Knex | Knex.Transaction,
  { row, leaseUntil }: OwnedClaim,
  status: number,
  headers: Record<string, string>,
  outcome: StoredOutcome<unknown>,
): Promise<boolean> {
  const updated = await db('idempotency_keys')
    .where({ ...keyOf(row), state: 'in_progress', lease_until: leaseUntil })
    .update({
      state: 'completed',
      response_status: status,
      response_headers: JSON.stringify(headers),
      response_body: storedOutcomeText(sealer, row.id, outcome),
      lease_until: null,
    });
  return updated === 1;
}

/** Errors thrown again from a stored outcome: the edge answers them with `Idempotent-Replayed: true`. */
const replayedErrors = new WeakSet<ApiError>();

export const isReplayedError = (error: unknown): boolean => isApiError(error) && replayedErrors.has(error);

/** The stored outcome again: the response with `replayed: true`, or the same ApiError thrown again. */
function replay<T>(sealer: Sealer | undefined, row: IdempotencyRow): IdempotentResponse<T> {
  const status = row.response_status as number;
  const headers = JSON.parse(row.response_headers ?? '{}') as Record<string, string>;
  const outcome = storedOutcomeOf<T>(sealer, row);
  if (outcome.kind === 'error') {
    const error = new ApiError(outcome.code, outcome.message, { ...outcome.extras, status });
    replayedErrors.add(error);
    throw error;
  }
  return { status, body: outcome.body, headers, replayed: true };
}

/** Thrown inside the work's transaction to undo it when the claim was lost meanwhile. */
class ClaimLost extends Error {}

/**
 * Runs `work` at most once per (installation, operation, key) in 24 hours and stores its first
 * outcome, ApiErrors included, with the request's hash; repeats get the stored outcome
 * (`replayed: true`, or the same ApiError with `Idempotent-Replayed: true`). Another request
 * under the key is 422 IDEMPOTENCY_KEY_REUSED; a repeat while the first runs is 409
 * IDEMPOTENCY_KEY_IN_PROGRESS. The work and the stored response commit in one transaction, so a
 * committed change always has its response; a failure that is not an ApiError stores nothing and
 * frees the key for a retry. `work` must use only the transaction it is given (on SQLite the pool
 * has one connection, which the transaction holds).
 */
export function runIdempotently<T>(
  deps: IdempotencyDeps,
  scope: IdempotencyScope,
  work: (trx: Knex.Transaction) => Promise<WorkResponse<T>>,
): Promise<IdempotentResponse<T>>;
/** With `inTransaction: false` (an operation that waits on the network) the work gets the database itself. */
export function runIdempotently<T>(
  deps: IdempotencyDeps,
  scope: IdempotencyScope,
  work: (db: Knex | Knex.Transaction) => Promise<WorkResponse<T>>,
  options: { inTransaction: boolean },
): Promise<IdempotentResponse<T>>;
export async function runIdempotently<T>(
  deps: IdempotencyDeps,
  scope: IdempotencyScope,
  work: (db: Knex.Transaction) => Promise<WorkResponse<T>>,
  { inTransaction: transactional = true }: { inTransaction?: boolean } = {},
): Promise<IdempotentResponse<T>> {
  const claimed = await claim(deps, scope);
  if (!claimed.owned) {
    if (claimed.row.state === 'in_progress') throw inProgress();
    return replay<T>(deps.sealer, claimed.row);
  }
  const owned: OwnedClaim = claimed;
  // Outside a transaction the work's writes commit as they go, and the answer is stored after them.
  const within = <R>(run: (db: Knex.Transaction) => Promise<R>): Promise<R> => (transactional ? inTransaction(deps.db, run) : run(deps.db as Knex.Transaction)); // the second overload's work takes either
  try {
    return await within(async (trx) => {
      const response = await work(trx);
      const headers = { ...(response.headers ?? {}) };
      const outcome: StoredOutcome<T> = { kind: 'response', body: JSON.parse(JSON.stringify(response.body ?? null)) as T };
      if (!(await complete(deps.sealer, trx, owned, response.status, headers, outcome))) throw new ClaimLost();
      return { status: response.status, body: outcome.body, headers, replayed: false };
    });
  } catch (error) {
    if (error instanceof ClaimLost) throw inProgress(); // another instance took the key over and runs it
    if (isApiError(error)) {
      // The work's changes were rolled back; its answer is the key's outcome from now on.
      const { code, message, extras, status } = error;
      await complete(deps.sealer, deps.db, owned, status, {}, { kind: 'error', code, message, extras: JSON.parse(JSON.stringify(extras)) as ErrorExtras });
      throw error;
    }
    await deps
      .db('idempotency_keys')
      .where({ ...keyOf(owned.row), state: 'in_progress', lease_until: owned.leaseUntil })
      .delete();
    throw error;
  }
}

/** A key past its 24 hours already counts as never used (`claim` replaces its row): nothing reads it again. */
export const idempotencyKeysExpiry: ExpiryRule = {
  ...expiresAtRule('idempotency_keys', ['store_id', 'id', 'expires_at']),
  // A day's partition goes whole once its last key has expired (db/partitions.ts).
  partitions: { column: 'expires_at', cutoff: (now) => now },
};

/** The stored answers, for `svc secrets reseal`: an expired one is never replayed, so it is left to housekeeping. */
export const idempotentAnswersSealed: SealedColumn = {
  table: 'idempotency_keys',
  key: 'id',
  column: 'response_body',
  purposeColumns: [],
  purposeOf: (row) => answerPurpose(String(row.id)),
  live: (rows, now) => rows.where('expires_at', '>', now),
};
