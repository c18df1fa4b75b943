import { type OperationEntry, operationTable } from '@svc/contract';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { authenticateBasic } from '../oauth/client-auth';
import type { App } from '../platform/apps';
import type { Services } from '../services/container';
import { pathTemplateOf } from './allowed-methods';

/**
 * The OAuth endpoints that authenticate the client (`/oauth/token`, revocation, introspection, the
 * token operations, launch verification) judge its authentication before anything else in the body,
 * as RFC 6749 §5.2 lists it first: a request with missing or wrong client credentials is 401
 * INVALID_CLIENT whatever its body holds (an unknown key, an unsupported grant), and says nothing of
 * the body to a caller it does not know. It runs once the body is read (a body that never comes is
 * the server's timeouts' to end), before it is validated; the router takes the client found here.
 *
 * Credentials in the body are a malformed request, not a failed authentication: the interface
 * accepts one method, Basic, and "credentials are never sent in the body", so such a body goes on
 * to validation, which refuses it 400 INVALID_REQUEST naming `client_id`/`client_secret`, with or
 * without a Basic header (docs/decisions/0096-refusals-that-say-what-to-do.md).
 */

const BODY_CREDENTIALS = ['client_id', 'client_secret'] as const;

const carriesCredentials = (body: unknown): boolean => typeof body === 'object' && body !== null && BODY_CREDENTIALS.some((key) => Object.hasOwn(body, key));

const CLIENT_OPERATIONS: readonly OperationEntry[] = Object.values(operationTable as Readonly<Record<string, OperationEntry>>).filter(
  (operation) => operation.auth === 'client',
);
const PATHS = [...new Set(CLIENT_OPERATIONS.map((operation) => operation.path))];

const authenticated = new WeakMap<Request, App>();

/** The client this request authenticated as before its body was read, if it is one of those operations. */
export const authenticatedClientOf = (req: Request): App | undefined => authenticated.get(req);

export function clientAuthenticationFirst(services: Services): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const path = pathTemplateOf(req.path, PATHS);
    const method = req.method.toLowerCase();
    if (path === undefined || !CLIENT_OPERATIONS.some((operation) => operation.path === path && operation.method === method)) return next();
    if (carriesCredentials(req.body)) return next();
    authenticateBasic(services, req.headers.authorization).then((client) => {
      authenticated.set(req, client);
      next();
    }, next);
  };
}
