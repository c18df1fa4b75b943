import { type OperationEntry, type OperationId, operationTable } from '@svc/contract';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { walkReadOn } from '../core/cursor';
import { isApiError } from '../core/errors';
import { emptyRecord } from '../core/records';
import type { ReadRoute } from '../db/read-routing';
import type { ReadAhead, Statement } from '../db/reads';
import { authenticateBasic } from '../oauth/client-auth';
import type { App } from '../platform/apps';
import type { Services } from '../services/container';
import type { IdempotencyOutcome } from '../services/metrics';
import { type Quota, type RateDecision, rateLimited } from '../services/rate-limit';
import { servedVersionOf, settleVersion } from './api-version';
import { authenticateBearer, type Principal, requireScopes } from './bearer';
import { refuseUnexpectedContent } from './bodyless';
import { authenticatedClientOf } from './client-first';
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
  principal?: Principal;
  client?: App;
  execution?: Execution;
  readAhead?: ReadAhead;
  /** Where a read that may lag goes (http/read-routes.ts), when read replicas are configured. */
  reads?: ReadRoute;
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
 * The statement of the operation's first read for this request, or none: a request its handler will
 * refuse (a bad cursor or filter) is not read ahead, and the handler answers the refusal.
 */
function firstStatementOf(firstRead: FirstRead<OperationId>, request: FirstReadRequest<OperationId>): Statement | undefined {
  try {
    return firstRead(request);
  } catch {
    return undefined;
  }
}

/**
 * Who is calling, per the operation's security: a bearer token (then the app's date version, the
 * store, the installation's quota and the scopes), or HTTP Basic client credentials (then the
 * client's date version and quota), or nobody
 * (`/oauth/authorize` still counts against the quota of the `client_id` it names).
 */
async function identify(
  services: Services,
  entry: OperationEntry,
  req: Request,
  res: Response,
  readAheadWith: { firstRead: FirstRead<OperationId>; keys: ServerKeys } | undefined,
  routed: boolean,
): Promise<Caller> {
  if (entry.auth === 'bearer') {
    const storeId = String(req.params.storeId);
    const firstRead =
      readAheadWith &&
      (() =>
        firstStatementOf(readAheadWith.firstRead, {
          params: req.params as FirstReadRequest<OperationId>['params'],
          query: req.query as FirstReadRequest<OperationId>['query'],
          storeId,
          pager: { key: readAheadWith.keys.cursor, now: services.clock.now() },
        }));
    const { principal, quota, readAhead } = await authenticateBearer(services, req.headers.authorization, storeId, services.quotas.installation, firstRead);
    noteCaller(res, principal);
    settleVersion(services, res, { pinned: principal.appApiVersion, installationId: principal.installationId });
    answerQuota(services, res, services.quotas.installation, quota);
    requireScopes(principal, entry, req.body);
    const execution = executionOf(principal, requestIdOf(res));
    // A routed read read the store's write positions ahead, not its own rows.
    if (routed) {
      const cursor = (req.query as { cursor?: unknown }).cursor;
      const walkOn = typeof cursor === 'string' && readAheadWith ? walkReadOn(readAheadWith.keys.cursor, cursor) : undefined;
      return { principal, execution, reads: services.replicas.route(readAhead?.rows ?? [], principal.installationId, walkOn) };
    }
    return { principal, execution, ...(readAhead ? { readAhead } : {}) };
  }
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
    // With replicas, a list's token statement reads the store's write positions instead of the list's first rows.
    const firstRead: FirstRead<OperationId> | undefined = routed ? ({ storeId }) => services.replicas.positionsOf(storeId) : handler.firstRead;
    routes.set(operationId, async (req, res, next) => {
      try {
        refuseUnexpectedContent(entry, req.headers);
        refuseLooseNumbers(req);
        // Before the caller, so that an operation's first read can open its cursor (the keys are cached: no statement).
        const keys = entry.auth === 'bearer' ? await serverKeys(services) : undefined;
        const caller = await identify(services, entry, req, res, firstRead && keys ? { firstRead, keys } : undefined, routed);
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
          keys,
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
