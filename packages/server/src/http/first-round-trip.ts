import { type ReadAhead, readWhile, type Statement } from '../db/reads';
import { ISSUED_ACCESS_TOKEN_OF_STORE_SQL, livenessOfFacts, TOKEN_FACTS_COLUMNS, type TokenLiveness, tokenLivenessSql } from '../platform/tokens';
import type { Services } from '../services/container';
import type { FoldedSpend, Quota, RateDecision } from '../services/rate-limit';
import type { JudgedToken, TokenContextRow } from './bearer';

/**
 * A store API request's first round trip, which the router makes before the bearer check judges
 * the token: the token's statement and, gated on the token, what the request reads first (on
 * PostgreSQL in one round trip, docs/decisions/0066-postgresql-read-path.md; the gate:
 * docs/decisions/0092-no-read-before-the-token.md).
 */

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
 * until the next commit; the liveness rule then judges it apart (`livenessOfFacts`).
 */
const TOKEN_CONTEXT_SQL = `select ${TOKEN_CONTEXT_COLUMNS} ${TOKENS_WITH_CONTEXT} where t.token_hash = :token_hash and t.kind = 'access'`;

/** The context judged now by the liveness rule (platform/tokens), in the statement. */
const JUDGED_CONTEXT_SQL = `select context.*, ${tokenLivenessSql('context')} as liveness from (${TOKEN_CONTEXT_SQL}) context`;

/**
 * The checks of the bearer check (`judgeBearer`) that let a request through, in SQL over the
 * judged context: a live token, for this store, not moving. A request refused with 401, 404 or 503
 * spends no quota.
 */
const LETS_THROUGH = "judged.liveness = 'live' and judged.token_store_id = :store_id and judged.routing_state <> 'migrating'";

/** The judged context with the installation's quota spent in it (one text for every quota: built once per fold). */
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

/** The token's row as its statement answers it: judged already where the statement binds the instant, with the quota's counter where it spends it. */
interface TokenStatementRow extends TokenContextRow {
  liveness?: TokenLiveness;
  quota_points?: number | null;
  quota_expire?: number | null;
}

/** The token a request presents, for which store, and when: what the round trip is bound with. */
export interface TokenRequest {
  readonly tokenHash: string;
  readonly storeId: string;
  readonly now: number;
}

/**
 * What goes with the token's statement, gated on the token: the operation's declared first read
 * (`Handler.firstRead`), or, for a read that may lag behind on a replica, the store's write
 * positions (http/read-routes.ts). Never both.
 */
export type ReadWithToken = { readonly firstRead: Statement; readonly positions?: never } | { readonly positions: Statement; readonly firstRead?: never };

/** The token's statement, and what it does beside reading the token's row. */
interface TokenStatement {
  readonly statement: Statement;
  /** The installation's quota that the statement spends, for a token it lets through; none: it is spent after the judgement. */
  readonly spending?: FoldedSpend;
}

/** The statements of the first round trip, each in its own slot. */
export interface FirstRoundTrip {
  readonly request: TokenRequest;
  readonly token: TokenStatement;
  readonly withToken?: ReadWithToken;
}

/** What the first round trip answered, each in its own slot. */
export interface FirstRoundTripRows {
  /** The presented token's row and its state at the request's instant; none: no access token has its hash. */
  readonly token: JudgedToken | undefined;
  /** The installation quota's decision, when the token's statement spent it. */
  readonly spent?: RateDecision;
  /** The rows of the operation's first read: read only for a live token of the path's store. */
  readonly firstRead?: ReadAhead;
  /** The store's recorded write positions (replica routing): read only for a live token of the path's store. */
  readonly positions?: readonly unknown[];
}

/**
 * The token's statement for `request`. Where the engine keeps reads until the next commit (SQLite),
 * it reads the token's context alone, which the reader keeps, and the token is judged apart;
 * elsewhere it judges the token at the instant, and spends the installation's quota where the
 * database counts quotas (PostgreSQL), so that a product read costs one round trip.
 */
function tokenStatementOf(services: Services, { tokenHash, storeId, now }: TokenRequest, quota: Quota): TokenStatement {
  if (services.engine.reads.keptUntilCommit) return { statement: { sql: TOKEN_CONTEXT_SQL, params: { token_hash: tokenHash } } };
  const spending = services.limiter.folded(quota);
  if (!spending) return { statement: { sql: JUDGED_CONTEXT_SQL, params: { token_hash: tokenHash, now } } };
  const params = { token_hash: tokenHash, store_id: storeId, now, ...spending.bindings() };
  return { statement: { sql: spendingSqlOf(spending), params }, spending };
}

/** The first round trip of a store API request presenting `request`'s token, spending `quota`, with what goes with the token. */
export const firstRoundTripOf = (services: Services, request: TokenRequest, quota: Quota, withToken: ReadWithToken | undefined): FirstRoundTrip => ({
  request,
  token: tokenStatementOf(services, request, quota),
  ...(withToken ? { withToken } : {}),
});

/**
 * A read made only for a token issued for the path's store and neither revoked nor expired: a
 * token never issued (anyone can make one that passes the checksum), expired, revoked or of another
 * store reads no store table (docs/decisions/0092-no-read-before-the-token.md).
 */
const readForIssuedToken = readWhile(ISSUED_ACCESS_TOKEN_OF_STORE_SQL);

/**
 * The token's state at the request's instant: as its statement judged it, or, for a row read
 * without the instant (kept), by the rule over its facts in a statement that reads no table, once.
 */
function livenessAt(services: Services, now: number): (row: TokenStatementRow) => Promise<TokenLiveness> {
  let judgedApart: Promise<TokenLiveness> | undefined;
  return async (row) => {
    if (row.liveness) return row.liveness;
    judgedApart ??= livenessOfFacts(services.db, row, now);
    return judgedApart;
  };
}

/** Makes the first round trip: the token's row (judged at the request's instant) and, for a token that lets the request through, what goes with it. */
export async function readFirstRoundTrip(services: Services, { request, token, withToken }: FirstRoundTrip): Promise<FirstRoundTripRows> {
  const { tokenHash, storeId, now } = request;
  const livenessOf = livenessAt(services, now);
  const read = withToken?.firstRead ?? withToken?.positions;
  const { judgement, read: readRows } = read
    ? await services.engine.reads.selectJudged(services.db, token.statement, {
        statement: read,
        gated: () => readForIssuedToken(read, { token_hash: tokenHash, store_id: storeId, now }),
        // Where the read follows the judgement (SQLite): the checks of a token that lets it through, but the store's moving.
        allows: async ([row]) => (row as TokenStatementRow | undefined)?.token_store_id === storeId && (await livenessOf(row as TokenStatementRow)) === 'live',
      })
    : { judgement: (await services.engine.reads.select(services.db, [token.statement]))[0] ?? [], read: undefined };
  const [row] = judgement as readonly TokenStatementRow[];
  if (!row) return { token: undefined };
  const { spending } = token;
  const spent = spending && row.quota_points != null && row.quota_expire != null ? spending.decisionOf(row.quota_points, row.quota_expire) : undefined;
  return {
    token: { row, liveness: await livenessOf(row) },
    ...(spent ? { spent } : {}),
    ...(readRows === undefined ? {} : withToken?.firstRead ? { firstRead: { rows: readRows } } : { positions: readRows }),
  };
}
