import { type OperationEntry, operationTable } from '@svc/contract';
import type { Request } from 'express';
import { ownValue } from '../core/records';

/** What the spec validator matched the request to: it runs first and sets `req.openapi`. */
export interface MatchedOperation {
  readonly schema?: { readonly operationId?: string };
  readonly pathParams?: Record<string, string>;
}

/** The validator's match; absent for the dashboard, the docs and paths the spec does not have. */
export const matchedOperation = (req: Request): MatchedOperation | undefined => (req as Request & { openapi?: MatchedOperation }).openapi;

/** The operationId of the request's operation, when the validator matched one. */
export const operationIdOf = (req: Request): string | undefined => matchedOperation(req)?.schema?.operationId;

/** The operation table's entry of the request's operation (its filters, scopes, …). */
export function operationEntryOf(req: Request): OperationEntry | undefined {
  const operationId = operationIdOf(req);
  return operationId === undefined ? undefined : ownValue(operationTable as Readonly<Record<string, OperationEntry>>, operationId);
}
