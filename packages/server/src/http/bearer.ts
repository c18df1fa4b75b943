import type { OperationEntry } from '@svc/contract';
import { ApiError } from '../core/errors';
import { ownValue } from '../core/records';
import { checkSecret } from '../credentials/secrets';
import { fromJsonList } from '../db/json-lists';
import { type ReadAhead, readWhile, type Statement } from '../db/reads';
import { satisfiesAny } from '../platform/scopes';
import { storeMigrating } from '../platform/stores';
import {
  effectiveScopes,
  ISSUED_ACCESS_TOKEN_OF_STORE_SQL,
  livenessOfFacts,
  TOKEN_FACTS_COLUMNS,
  type TokenLiveness,
  tokenLivenessSql,
} from '../platform/tokens';
import type { Services } from '../services/container';
import type { FoldedSpend, Quota, RateDecision } from '../services/rate-limit';

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

interface TokenContextRow {
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

const TOKEN_CONTEXT_COLUMNS = `
  t.id as token_id, t.store_id as token_store_id, t.first_used_at, ${TOKEN_FACTS_COLUMNS}, g.scopes as grant_scopes,
  i.id as installation_id, i.granted_scopes as installation_scopes, i.installed_at, i.grant_revision, i.version_id,
  a.id as app_id, a.name as app_name, a.auth_epoch, a.api_version as app_api_version, s.routing_state, s.route_epoch`;

const TOKENS_WITH_CONTEXT = `
  from tokens t
  join grants g on g.id = t.grant_id
  join installations i on i.id = t.installation_id
  join apps a on a.id = i.app_id
  join stores s on s.id = t.store_id`;

/**
 * One statement (every request makes it, so it is plain SQL): the token with its grant,
 * installation, app and store. It does not depend on the instant, so SQLite's reader keeps its row
 * until the next commit; the liveness rule judges it apart ({@link livenessOfContext}).
 */
const TOKEN_CONTEXT_SQL = `select ${TOKEN_CONTEXT_COLUMNS} ${TOKENS_WITH_CONTEXT} where t.token_hash = :token_hash and t.kind = 'access'`;

/** The context judged now by the liveness rule (platform/tokens), in the statement: where the quota is spent in it. */
const JUDGED_CONTEXT_SQL = `select context.*, ${tokenLivenessSql('context')} as liveness from (${TOKEN_CONTEXT_SQL}) context`;

/**
 * The checks of {@link authenticateBearer} that let a request through, in SQL over the judged
 * context: a live token, for this store, not moving. A request refused with 401, 404 or 503 spends
 * no quota.
 */
const LETS_THROUGH = "judged.liveness = 'live' and judged.token_store_id = :store_id and judged.routing_state <> 'migrating'";

/** The token's statement with the installation's quota spent in it (one text for every quota: built once per fold). */
const spendingSqlByFold = new WeakMap<FoldedSpend, string>();

function spendingSqlOf(fold: FoldedSpend): string {
  let sql = spendingSqlByFold.get(fold);
  if (sql === undefined) {
    sql = `with judged as (${JUDGED_CONTEXT_SQL}), spent as (${fold.sql('judged', 'judged.installation_id', LETS_THROUGH)})
      select judged.*, spent.points as quota_points, spent.expire as quota_expire from judged left join spent on true`;
    spendingSqlByFold.set(fold, sql);
  }
  return sql;
}

interface SpendingRow extends TokenContextRow {
  /** The token's state now, when the statement judged it (where it spent the quota). */
  liveness?: TokenLiveness;
  quota_points?: number | null;
  quota_expire?: number | null;
}

/** What the token's statement answered: its context, its state when judged already, the quota's decision when it spent it, the first read's rows. */
interface LoadedContext {
  row: SpendingRow | undefined;
  liveness?: TokenLiveness;
  spent?: RateDecision;
  readAhead?: ReadAhead;
}

/**
 * An operation's first read, made only for a token issued for the path's store and neither revoked
 * nor expired: a token never issued (anyone can make one that passes the checksum), expired, revoked
 * or of another store reads no store table (docs/decisions/0092-no-read-before-the-token.md).
 */
const readForIssuedToken = readWhile(ISSUED_ACCESS_TOKEN_OF_STORE_SQL);

/**
 * The token's context with the operation's first read, together (on PostgreSQL in one round trip,
 * docs/decisions/0066-postgresql-read-path.md), the read gated on the token (0092), and where the
 * database counts quotas (PostgreSQL) with the installation's quota spent in the token's own statement.
 */
async function loadTokenContext(
  services: Services,
  tokenHash: string,
  storeId: string,
  now: number,
  fold: FoldedSpend | undefined,
  firstRead: Statement | undefined,
): Promise<LoadedContext> {
  const token: Statement = fold
    ? { sql: spendingSqlOf(fold), params: { token_hash: tokenHash, store_id: storeId, now, ...fold.bindings() } }
    : { sql: TOKEN_CONTEXT_SQL, params: { token_hash: tokenHash } };
  let liveness: TokenLiveness | undefined;
  let row: SpendingRow | undefined;
  let readRows: readonly unknown[] | undefined;
  if (firstRead) {
    const judged = await services.engine.reads.selectJudged(services.db, token, {
      statement: firstRead,
      gated: () => readForIssuedToken(firstRead, { token_hash: tokenHash, store_id: storeId, now }),
      // Where the read follows the judgement (SQLite): the checks of a token that lets it through, but the store's moving.
      allows: async ([judgedRow]) => {
        const context = judgedRow as SpendingRow | undefined;
        if (context?.token_store_id !== storeId) return false;
        liveness = await livenessOfContext(services, context, now);
        return liveness === 'live';
      },
    });
    [row] = judged.judgement as SpendingRow[];
    readRows = judged.read;
  } else {
    [[row]] = (await services.engine.reads.select(services.db, [token])) as [SpendingRow[]];
  }
  const loaded: LoadedContext = { row, ...(liveness ? { liveness } : {}), ...(readRows ? { readAhead: { rows: readRows } } : {}) };
  if (row?.quota_points == null || row.quota_expire == null) return loaded;
  return { ...loaded, spent: fold?.decisionOf(row.quota_points, row.quota_expire) };
}

/** A token that lets the request through, and the decision of the installation's quota (spent, whatever it says). */
export interface Authenticated {
  principal: Principal;
  quota: RateDecision;
  /** The rows of the operation's first read, read with the token's statement. */
  readAhead?: ReadAhead;
}

/**
 * Resolves `Authorization: Bearer` for a store API request: 401 for anything but a live token of the
 * installation's current generation, 404 STORE_NOT_FOUND for another store's path, 503 while the
 * store moves. A token that lets the request through spends one request of the installation's
 * quota, whose decision the caller answers; scopes are checked after it ({@link requireScopes}), so
 * rate limiting comes first. `firstRead` gives a statement for this path's store that is read with
 * the token's (on PostgreSQL in the same round trip); its rows are answered only with a token that
 * lets the request through.
 */
export async function authenticateBearer(
  services: Services,
  header: string | undefined,
  storeId: string,
  quota: Quota,
  firstRead?: () => Statement | undefined,
): Promise<Authenticated> {
  const presented = checkSecret('accessToken', bearerOf(header));
  if (!presented.ok) throw unauthenticated('The access token is not a store API access token (svc_at_…).');
  const now = services.clock.now();
  const loaded = await loadTokenContext(services, presented.hash, storeId, now, services.limiter.folded(quota), firstRead?.());
  const { row, spent, readAhead } = loaded;
  if (!row) throw unauthenticated('The access token is unknown.');
  const liveness = loaded.liveness ?? (await livenessOfContext(services, row, now));
  if (liveness !== 'live') throw unauthenticated(NOT_LIVE_MESSAGES[liveness]);
  if (row.token_store_id !== storeId) throw new ApiError('STORE_NOT_FOUND', 'The access token is not bound to this store.');
  if (row.routing_state === 'migrating') throw storeMigrating();
  if (row.first_used_at === null) await services.db('tokens').where({ id: row.token_id, first_used_at: null }).update({ first_used_at: now });
  // Spent here without a fold (SQLite), and should the statement's checks ever pass less than these.
  const decision = spent ?? (await services.limiter.take(quota, row.installation_id));
  return readAhead ? { principal: principalOfRow(row), quota: decision, readAhead } : { principal: principalOfRow(row), quota: decision };
}

/** The token's state now: as the statement judged it, or (a kept row) by the rule over its facts. */
const livenessOfContext = (services: Services, row: SpendingRow, now: number): Promise<TokenLiveness> | TokenLiveness =>
  row.liveness ?? livenessOfFacts(services.db, row, now);

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
