import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

/** A fresh UUID per request, in `res.locals.requestId` and the `X-Request-Id` header. */
export function assignRequestId(_req: Request, res: Response, next: NextFunction): void {
  const requestId = randomUUID();
  res.locals.requestId = requestId;
  res.setHeader('X-Request-Id', requestId);
  next();
}

export function requestIdOf(res: Response): string {
  return (res.locals.requestId as string | undefined) ?? randomUUID();
}
