import { type OperationEntry, operationTable } from '@svc/contract';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { authenticateBasic } from '../oauth/client-auth';
import type { App } from '../platform/apps';
import type { Services } from '../services/container';
import { pathTemplateOf } from './allowed-methods';

/**
 * The OAuth endpoints that authenticate the client (`/oauth/token`, revocation, introspection, the
 * token operations, launch verification) judge its authentication before anything in the body,
 * as RFC 6749 §5.2 lists it first: a request with missing or wrong client credentials is 401
 * INVALID_CLIENT whatever its body holds (an unknown key, an unsupported grant, credentials in the
 * body instead of the Basic header), and says nothing of the body to a caller it does not know.
 * This runs before the body is read and validated; the router takes the client found here.
 */

const CLIENT_OPERATIONS: readonly OperationEntry[] = Object.values(operationTable as Readonly<Record<string, OperationEntry>>).filter(
  (operation) => operation.auth === 'client',
);
const PATHS = [...new Set(CLIENT_OPERATIONS.map((operation) => operation.path))];

const authenticated = new WeakMap<Request, App>();

/** The client this request authenticated as before its body was read, if it is one of those operations. */
export const authenticatedClientOf = (req: Request): App | undefined => authenticated.get(req);

export function clientAuthenticationFirst(services: Services): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const path = pathTemplateOf(req.path, PATHS);
    const method = req.method.toLowerCase();
    if (path === undefined || !CLIENT_OPERATIONS.some((operation) => operation.path === path && operation.method === method)) return next();
    authenticateBasic(services, req.headers.authorization).then(
      (client) => {
        authenticated.set(req, client);
        next();
      },
      (refusal: unknown) => {
        // Answered before the body was read: the connection closes after the answer (RFC 9112 §9.6), so that
        // a body that never comes cannot keep it, or the server's stop, waiting.
        res.set('Connection', 'close');
        next(refusal);
      },
    );
  };
}
