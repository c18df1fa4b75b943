import { type OperationEntry, type OperationId, operationTable } from '@svc/contract';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { walkReadOn } from '../core/cursor';
import { isApiError } from '../core/errors';
import { emptyRecord } from '../core/records';
import type { ReadRoute } from '../db/read-routing';
import type { ReadAhead } from '../db/reads';
import { authenticateBasic } from '../oauth/client-auth';
import type { App } from '../platform/apps';
import { noteFirstUse } from '../platform/tokens';
import type { Services } from '../services/container';
import type { IdempotencyOutcome } from '../services/metrics';
import { type Quota, type RateDecision, rateLimited } from '../services/rate-limit';
import { servedVersionOf, settleVersion } from './api-version';
import { judgeBearer, type Principal, presentedTokenHash, requireScopes } from './bearer';
import { refuseUnexpectedContent } from './bodyless';
import { authenticatedClientOf } from './client-first';
import { firstRoundTripOf, type ReadWithToken, readFirstRoundTrip } from './first-round-trip';
import type { Execution, FirstRead, FirstReadRequest, Handler, HandlerContext, Handlers, ServerKeys } from './handler';
import { isReplayedError, REPLAYED_HEADER, requestHashOf, runIdempotently } from './idempotency';
import { matchedOperation } from './matched-operation';
import { rateLimitHeaders } from './protocol-headers';
import { refuseLooseNumbers } from './query-numbers';
import { mayWrite, readOnRoute, readsMayLag } from './read-routes';
import { requestIdOf, traceOf } from './request-context';
import { noteCaller } from './request-log';

function headersOf(req: Request): Record<string, string | undefined> {
  const headers = emptyRecord<string | undefined>();
  for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  return headers;
}

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

function send(res: Response, result: Answer): void {
  res.status(result.status);
  if (result.headers) res.set(result.headers);
  if (result.body === undefined) res.end();
  else if (typeof result.body === 'string') res.type('html').send(result.body);
  else res.json(result.body);
}

export const executionOf = (principal: Principal, requestId: string): Execution => ({
  appId: principal.appId,
  versionId: principal.versionId,
  installationId: principal.installationId,
  storeId: principal.storeId,
  requestId,
  generation: principal.generation,
  routeEpoch: principal.routeEpoch,
  appAuthEpoch: principal.appAuthEpoch,
  grantRevision: principal.grantRevision,
});

interface Caller {
  /** The server's keys, for a store API request (its first read may open a cursor). */
  keys?: ServerKeys;
  principal?: Principal;
  client?: App;
  execution?: Execution;
  /** The rows of the operation's first read, read in the first round trip. */
  readAhead?: ReadAhead;
  /** Where a read that may lag goes (http/read-routes.ts), when read replicas are configured. */
  reads?: ReadRoute;
}

/** An operation as the router runs it: what it reads in its first round trip besides the token. */
interface RoutedOperation {
  readonly entry: OperationEntry;
  /** Its handler's declared first read ({@link Handler.firstRead}). */
  readonly firstRead?: FirstRead<OperationId>;
  /** A read that may lag, with read replicas: the store's write positions go with the token instead, and route it. */
  readonly routed: boolean;
}

/** A request taken from the quota: the RateLimit fields go on the answer whatever the outcome, 429 when spent. */
function answerQuota(services: Services, res: Response, quota: Quota, decision: RateDecision): void {
  res.set(rateLimitHeaders(quota, decision));
  if (!decision.allowed) {
    services.metrics.rateLimited(quota.policy);
    throw rateLimited(quota, decision);
  }
}

/** Takes one request from the quota and answers its decision. */
async function spendQuota(services: Services, res: Response, quota: Quota, key: string): Promise<void> {
  answerQuota(services, res, quota, await services.limiter.take(quota, key));
}

/**
 * What goes with the token in the request's first round trip: a routed read's store write
 * positions, or the operation's first read. A request its handler will refuse (a bad cursor or
 * filter) is not read ahead, and the handler answers the refusal.
 */
function readWithTokenOf(services: Services, operation: RoutedOperation, request: FirstReadRequest<OperationId>): ReadWithToken | undefined {
  if (operation.routed) return { positions: services.replicas.positionsOf(request.storeId) };
  if (!operation.firstRead) return undefined;
  try {
    const firstRead = operation.firstRead(request);
    return firstRead && { firstRead };
  } catch {
    return undefined;
  }
}

/** Where a later page of a routed walk goes: where its first page was read, as its cursor says. */
function walkOnOf(req: Request, keys: ServerKeys): string | undefined {
  const cursor = (req.query as { cursor?: unknown }).cursor;
  return typeof cursor === 'string' ? walkReadOn(keys.cursor, cursor) : undefined;
}

/**
 * A bearer token's caller: the router makes the first round trip (the token's row, and what goes
 * with it), the bearer check judges the row, then the app's date version, the installation's quota
 * and the scopes.
 */
async function identifyBearer(services: Services, operation: RoutedOperation, req: Request, res: Response): Promise<Caller> {
  // Before the token's round trip, so that an operation's first read can open its cursor (the keys are cached: no statement).
  const keys = await serverKeys(services);
  const storeId = String(req.params.storeId);
  const tokenHash = presentedTokenHash(req.headers.authorization);
  const now = services.clock.now();
  const request = { params: req.params, query: req.query, storeId, pager: { key: keys.cursor, now } } as FirstReadRequest<OperationId>;
  const quota = services.quotas.installation;
  const trip = firstRoundTripOf(services, { tokenHash, storeId, now }, quota, readWithTokenOf(services, operation, request));
  const answered = await readFirstRoundTrip(services, trip);
  const { principal, firstUse } = judgeBearer({ token: answered.token, storeId, now });
  if (firstUse) await noteFirstUse(services.db, firstUse.tokenId, firstUse.at);
  // Spent here where the token's statement did not spend it (SQLite), and should its checks ever pass less than the judgement.
  const decision = answered.spent ?? (await services.limiter.take(quota, principal.installationId));
  noteCaller(res, principal);
  settleVersion(services, res, { pinned: principal.appApiVersion, installationId: principal.installationId });
  answerQuota(services, res, quota, decision);
  requireScopes(principal, operation.entry, req.body);
  const execution = executionOf(principal, requestIdOf(res));
  if (operation.routed)
    return { keys, principal, execution, reads: services.replicas.route(answered.positions ?? [], principal.installationId, walkOnOf(req, keys)) };
  return { keys, principal, execution, ...(answered.firstRead ? { readAhead: answered.firstRead } : {}) };
}

/**
 * Who is calling, per the operation's security: a bearer token ({@link identifyBearer}), or HTTP
 * Basic client credentials (then the client's date version and quota), or nobody
 * (`/oauth/authorize` still counts against the quota of the `client_id` it names).
 */
async function identify(services: Services, operation: RoutedOperation, req: Request, res: Response): Promise<Caller> {
  const { entry } = operation;
  if (entry.auth === 'bearer') return identifyBearer(services, operation, req, res);
  if (entry.auth === 'client') {
    const client = authenticatedClientOf(req) ?? (await authenticateBasic(services, req.headers.authorization));
    noteCaller(res, { appId: client.id });
    settleVersion(services, res, { pinned: client.api_version });
    await spendQuota(services, res, services.quotas.client, client.id);
    return { client };
  }
  const namedClient = (req.query as Record<string, unknown>).client_id;
  if (entry.operationId === 'oauth.authorize' && typeof namedClient === 'string') {
    noteCaller(res, { appId: namedClient });
    await spendQuota(services, res, services.quotas.client, namedClient);
  }
  return {};
}

/** The server's HMAC keys, created once per database and kept by the services' keys (never fetched inside a transaction). */
async function serverKeys(services: Services): Promise<ServerKeys> {
  const [etag, cursor] = await Promise.all([services.serviceKeys.get('etag'), services.serviceKeys.get('cursor')]);
  return { etag, cursor };
}

/** Replays answer with this request's id, so `meta.request_id` always equals `X-Request-Id`. */
function withRequestId(body: unknown, requestId: string): unknown {
  if (!body || typeof body !== 'object') return body;
  const envelope = body as { meta?: object; execution?: object };
  return {
    ...envelope,
    ...(envelope.meta ? { meta: { ...envelope.meta, request_id: requestId } } : {}),
    ...(envelope.execution ? { execution: { ...envelope.execution, requestId } } : {}),
  };
}

/**
 * Runs the handler; a POST that takes `Idempotency-Key` runs inside the key's transaction, and its
 * first answer (errors included) is replayed for 24 hours with `Idempotent-Replayed: true`.
 */

async function execute(
  handler: (context: HandlerContext<OperationId>) => Promise<Answer>,
  context: HandlerContext<OperationId>,
  req: Request,
): Promise<Answer> {
  const { operation, principal, services } = context;
  if (!operation.requiresIdempotencyKey || !principal) return handler(context);
  const scope = {
    storeId: principal.storeId,
    installationId: principal.installationId,
    operationId: operation.operationId,
    key: String(req.headers['idempotency-key']),
    requestHash: requestHashOf(req.method, req.path, req.body),
  };
  const result = await runIdempotently(
    services,
    scope,
    async (db) => {
      const answer = await handler({ ...context, db });
      return { status: answer.status, body: answer.body as unknown, ...(answer.headers ? { headers: answer.headers } : {}) };
    },
    { inTransaction: (handler as Handler<OperationId>).outsideTransaction !== true },
  ).catch((error: unknown) => {
    const outcome = idempotencyOutcomeOf(error);
    if (outcome) services.metrics.idempotency(outcome);
    throw error;
  });
  if (result.replayed) services.metrics.idempotency('replayed');
  const headers = result.replayed ? { ...result.headers, [REPLAYED_HEADER]: 'true' } : result.headers;
  return { status: result.status, body: result.replayed ? withRequestId(result.body, context.requestId) : result.body, headers };
}

/** What a refusal of `runIdempotently` tells `/metrics`: a stored error answered again, or the key refused. */
function idempotencyOutcomeOf(error: unknown): IdempotencyOutcome | undefined {
  if (isReplayedError(error)) return 'replayed';
  if (!isApiError(error)) return undefined;
  if (error.code === 'IDEMPOTENCY_KEY_IN_PROGRESS') return 'in_progress';
  return error.code === 'IDEMPOTENCY_KEY_REUSED' ? 'key_reused' : undefined;
}

/**
 * Runs a request that may write, then records where the installation's writes end (on the primary,
 * before the answer leaves), so that its next list on any instance waits for a replica to have
 * them. Recorded after a refusal too: a request may have committed part of its work before it.
 */
async function executeNotingWrites(services: Services, principal: Principal, run: () => Promise<Answer>): Promise<Answer> {
  try {
    return await run();
  } finally {
    // The primary that has just committed failing within the next statement is rare; the write's
    // answer stands, and the installation's reads rely on the lag bound until its next write.
    await services.replicas.noteWrite(principal.storeId, principal.installationId).catch(() => undefined);
  }
}

type RouteHandler = (req: Request, res: Response, next: NextFunction) => Promise<void>;

/**
 * Runs each operation of the generated table on its handler; fails at start-up if one is missing.
 * The route was matched once already, by the spec validator: the handler is found by its operationId
 * and its path parameters, not by a second walk through every route.
 */
export function operationRouter(handlers: Handlers, services: Services): RequestHandler {
  const routes = new Map<string, RouteHandler>();
  for (const entry of Object.values(operationTable) as OperationEntry[]) {
    const operationId = entry.operationId as OperationId;
    const handler = handlers[operationId] as unknown as
      | (((context: HandlerContext<OperationId>) => Promise<Answer>) & { firstRead?: FirstRead<OperationId> })
      | undefined;
    if (typeof handler !== 'function') throw new Error(`No handler for operation ${operationId}`);
    const routed = services.replicas.configured && readsMayLag(entry);
    const notesWrites = services.replicas.configured && mayWrite(entry);
    const operation: RoutedOperation = { entry, routed, ...(handler.firstRead ? { firstRead: handler.firstRead } : {}) };
    routes.set(operationId, async (req, res, next) => {
      try {
        refuseUnexpectedContent(entry, req.headers);
        refuseLooseNumbers(req);
        const caller = await identify(services, operation, req, res);
        const context = {
          operation: entry,
          requestId: requestIdOf(res),
          trace: traceOf(res),
          receivedAt: (res.locals.receivedAt as number | undefined) ?? services.clock.now(),
          params: req.params,
          query: req.query,
          body: req.body,
          headers: headersOf(req),
          services,
          db: services.db,
          apiVersion: servedVersionOf(res, services),
          ...caller,
        } as unknown as HandlerContext<OperationId>;
        if (caller.reads) {
          send(res, await readOnRoute(services, caller.reads, (reads) => execute(handler, { ...context, db: reads.db, reads }, req)));
        } else if (notesWrites && caller.principal) {
          send(res, await executeNotingWrites(services, caller.principal, () => execute(handler, context, req)));
        } else {
          send(res, await execute(handler, context, req));
        }
      } catch (error) {
        next(error);
      }
    });
  }
  return (req, res, next) => {
    const matched = matchedOperation(req);
    const route = matched?.schema?.operationId === undefined ? undefined : routes.get(matched.schema.operationId);
    if (!route) return next();
    // Express gives every middleware layer its own (here empty) params: the validator's are the path's.
    req.params = matched?.pathParams ?? {};
    void route(req, res, next);
  };
}
