import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Clock } from '../core/clock';
import { type RequestTrace, traceOfRequest } from '../core/trace-context';
import type { Reads } from '../db/engine';

/**
 * An `X-Request-Id` a caller (a load balancer, a proxy, an app) may have the service keep: up to
 * 128 characters that cannot break a header, a log line or a query (letters, digits and `-_.:/+=@`).
 * Anything else is replaced by the request's own id.
 */
const KEPT_REQUEST_ID = /^[A-Za-z0-9\-_.:/+=@]{1,128}$/;

/** The caller's `X-Request-Id` when it may be kept, else undefined. */
export function keptRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && KEPT_REQUEST_ID.test(header) ? header : undefined;
}

/**
 * What every request starts with: kept reads checked again (the engine's reads), its id, its trace, the
 * instant it arrived (`res.locals.receivedAt`), and its query parsed once: Express 5's `req.query`
 * is a getter that parses the query string again on every read.
 *
 * The id: `res.locals.requestId` is always a fresh UUID (the interface's `meta.request_id`, unique
 * per request). A caller's `X-Request-Id` of safe characters is kept (`res.locals.callerRequestId`),
 * echoed in the `X-Request-Id` answer header and logged beside it; without one, the header carries
 * the UUID. The trace: W3C `traceparent`/`tracestate` (core/trace-context).
 */
export function requestContext(clock: Clock, reads: Reads): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    reads.noteRequestArrival();
    const requestId = randomUUID();
    const callerRequestId = keptRequestId(req.headers['x-request-id']);
    res.locals.requestId = requestId;
    res.locals.callerRequestId = callerRequestId;
    res.locals.trace = traceOfRequest(req.headers.traceparent as string | undefined, req.headers.tracestate as string | undefined);
    res.locals.receivedAt = clock.now();
    res.setHeader('X-Request-Id', callerRequestId ?? requestId);
    Object.defineProperty(req, 'query', { value: req.query, writable: true, configurable: true, enumerable: true });
    next();
  };
}

export function requestIdOf(res: Response): string {
  return (res.locals.requestId as string | undefined) ?? randomUUID();
}

/** The caller's own `X-Request-Id`, when it was kept. */
export const callerRequestIdOf = (res: Response): string | undefined => res.locals.callerRequestId as string | undefined;

/** The request's trace (set for every request by `requestContext`). */
export const traceOf = (res: Response): RequestTrace | undefined => res.locals.trace as RequestTrace | undefined;
