import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Clock } from '../core/clock';
import { noteRequestArrival } from '../db/reads';

/**
 * What every request starts with: kept reads checked again (db/reads), a fresh UUID (`res.locals.requestId` and the `X-Request-Id`
 * header), the instant it arrived (`res.locals.receivedAt`), and its query parsed once: Express 5's
 * `req.query` is a getter that parses the query string again on every read.
 */
export function requestContext(clock: Clock): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    noteRequestArrival();
    const requestId = randomUUID();
    res.locals.requestId = requestId;
    res.locals.receivedAt = clock.now();
    res.setHeader('X-Request-Id', requestId);
    Object.defineProperty(req, 'query', { value: req.query, writable: true, configurable: true, enumerable: true });
    next();
  };
}

export function requestIdOf(res: Response): string {
  return (res.locals.requestId as string | undefined) ?? randomUUID();
}
