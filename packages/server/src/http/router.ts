import { type OperationEntry, type OperationId, operationTable } from '@svc/contract';
import { type NextFunction, type Request, type Response, Router } from 'express';
import { type Principal, authenticateBearer, requireScopes } from '../auth/bearer';
import type { Handlers } from '../generated/handlers';
import { authenticateBasic } from '../oauth/client-auth';
import type { App } from '../platform/apps';
import type { Services } from '../services';
import { enforceQuota } from './rate-limit';
import type { Execution, Handler, HandlerContext } from './handler';
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
}

/**
 * Who is calling, per the operation's security: a bearer token (then the store, the installation's
 * quota and the scopes), or HTTP Basic client credentials (then the client's quota), or nobody.
 * Rate-limit headers go on the response whatever the outcome.
 */
async function identify(services: Services, entry: OperationEntry, req: Request, res: Response): Promise<Caller> {
  if (entry.auth === 'bearer') {
    const principal = await authenticateBearer(services, req.headers.authorization, String(req.params.storeId));
    res.set(await enforceQuota(services.limiter, services.quotas.installation, principal.installationId));
    requireScopes(principal, entry, req.body);
    return { principal, execution: executionOf(principal, requestIdOf(res)) };
  }
  if (entry.auth === 'client') {
    const client = await authenticateBasic(services, req.headers.authorization);
    res.set(await enforceQuota(services.limiter, services.quotas.client, client.id));
    return { client };
  }
  return {};
}

/** Mounts every operation of the generated table on its handler; fails at start-up if one is missing. */
export function operationRouter(handlers: Handlers, services: Services): Router {
  const router = Router();
  for (const entry of Object.values(operationTable) as OperationEntry[]) {
    const operationId = entry.operationId as OperationId;
    const handler = handlers[operationId] as unknown as Handler<OperationId> | undefined;
    if (typeof handler !== 'function') throw new Error(`No handler for operation ${operationId}`);
    router[entry.method](entry.expressPath, async (req: Request, res: Response, next: NextFunction) => {
      try {
        const caller = await identify(services, entry, req, res);
        const context = {
          operation: entry,
          requestId: requestIdOf(res),
          params: req.params,
          query: req.query,
          body: req.body,
          headers: headersOf(req),
          services,
          ...caller,
        } as unknown as HandlerContext<OperationId>;
        send(res, await handler(context));
      } catch (error) {
        next(error);
      }
    });
  }
  return router;
}
