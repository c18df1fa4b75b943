import { type OperationEntry, type OperationId, operationTable } from '@svc/contract';
import { type Request, type Response, Router } from 'express';
import type { Handlers } from '../generated/handlers';
import type { Handler, HandlerContext } from './handler';
import { requestIdOf } from './request-context';

function headersOf(req: Request): Record<string, string | undefined> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  return headers;
}

function send(res: Response, result: { status: number; body?: unknown; headers?: Record<string, string> }): void {
  res.status(result.status);
  if (result.headers) res.set(result.headers);
  if (result.body === undefined) res.end();
  else if (typeof result.body === 'string') res.type('html').send(result.body);
  else res.json(result.body);
}

/** Mounts every operation of the generated table on its handler; fails at start-up if one is missing. */
export function operationRouter(handlers: Handlers): Router {
  const router = Router();
  for (const entry of Object.values(operationTable) as OperationEntry[]) {
    const operationId = entry.operationId as OperationId;
    const handler = handlers[operationId] as unknown as Handler<OperationId> | undefined;
    if (typeof handler !== 'function') throw new Error(`No handler for operation ${operationId}`);
    router[entry.method](entry.expressPath, async (req: Request, res: Response) => {
      const context = {
        operation: entry,
        requestId: requestIdOf(res),
        params: req.params,
        query: req.query,
        body: req.body,
        headers: headersOf(req),
        execution: res.locals.execution,
      } as unknown as HandlerContext<OperationId>;
      send(res, await handler(context));
    });
  }
  return router;
}
