import fs from 'node:fs';
import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '../core/errors';
import { bundledSpecPath } from '../core/paths';
import { errorBody } from './error-mapper';
import { requestIdOf } from './request-context';

interface DocumentedOperation {
  operationId: string;
  method: string;
  path: RegExp;
  responses: ReadonlySet<string>;
}

type PathItems = Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** `/stores/{storeId}/v1/products/{id}` → a pattern for one path segment per parameter (a trailing `/` ignored, as Express does). */
const pathPattern = (template: string): RegExp => new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}/]+\}/g, '[^/]+')}/?$`);

let operations: readonly DocumentedOperation[] | undefined;

/** Every operation of the bundled spec with the statuses it documents, read once. */
function documentedOperations(): readonly DocumentedOperation[] {
  if (operations) return operations;
  const { paths } = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as { paths: PathItems };
  operations = Object.entries(paths).flatMap(([template, pathItem]) =>
    METHODS.flatMap((method) => {
      const operation = pathItem[method];
      if (!operation?.operationId) return [];
      return [{ operationId: operation.operationId, method, path: pathPattern(template), responses: new Set(Object.keys(operation.responses ?? {})) }];
    }),
  );
  return operations;
}

/** What `default` stands for: an unexpected failure (500 INTERNAL) and a stub's answer (501 NOT_IMPLEMENTED). */
const COVERED_BY_DEFAULT = new Set([500, 501]);

/** Whether `responses` documents `status`: listed itself (or as `4XX`), or a 500/501 under `default`. */
export function documentsStatus(responses: ReadonlySet<string>, status: number): boolean {
  const code = String(status);
  if (responses.has(code) || responses.has(`${code.charAt(0)}XX`)) return true;
  return COVERED_BY_DEFAULT.has(status) && responses.has('default');
}

/** The operation a request is for, by method and path (also when it was refused before the validator matched it). */
const operationOf = (req: Request): DocumentedOperation | undefined => {
  const method = req.method.toLowerCase();
  return documentedOperations().find((operation) => operation.method === method && operation.path.test(req.path));
};

type End = Response['end'];

/**
 * Makes an answer whose status its operation does not document a loud failure: a 500 INTERNAL that
 * names the operation and the status, logged. Every operation has `default`, so response validation
 * alone accepts any error status; with this on (tests), every test that provokes an undocumented
 * status fails, and the spec has to list it. The check runs as the answer ends, after the handler
 * or the error mapper chose the status; answers to requests that name no operation are left alone.
 */
export function requireDocumentedStatuses(): RequestHandler {
  return (req, res, next) => {
    const end: End = res.end.bind(res);
    res.end = ((...args: Parameters<End>) => {
      const operation = res.headersSent ? undefined : operationOf(req);
      if (!operation || documentsStatus(operation.responses, res.statusCode)) return end(...args);
      const message = `${operation.operationId} answered ${res.statusCode}, a status its responses in the spec do not document.`;
      const requestId = requestIdOf(res);
      console.error(`[${requestId}] ${req.method} ${req.originalUrl}: ${message}`);
      const body = JSON.stringify(errorBody(new ApiError('INTERNAL', message), requestId));
      res.statusCode = 500;
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.setHeader('Content-Length', Buffer.byteLength(body));
      return end(body);
    }) as End;
    next();
  };
}
