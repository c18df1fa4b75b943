import type { OperationEntry } from '../../packages/contract/src/operation';
import { resolveLocalRef } from '../../packages/contract/src/refs';
import type { OpenApiDocument } from './bundle';

export type { OperationEntry };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Ref = { $ref: string };
type Parameter = { name: string; in: string; required?: boolean; 'x-filter'?: boolean };
type Operation = {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: (Parameter | Ref)[];
  requestBody?: { content?: Record<string, unknown> } | Ref;
  responses?: Record<string, unknown>;
  'x-field-scopes'?: Record<string, string[]>;
};

function resolve<T>(document: OpenApiDocument, value: T | Ref): T {
  return resolveLocalRef<T>(document, value);
}

function authOf(security: Record<string, string[]>[] | undefined): OperationEntry['auth'] {
  if (!security || security.length === 0) return 'none';
  const schemes = new Set(security.flatMap((requirement) => Object.keys(requirement)));
  if (schemes.has('clientBasic')) return 'client';
  if (schemes.has('oauth2')) return 'bearer';
  throw new Error(`Unknown security schemes ${[...schemes].join(', ')}`);
}

/** Reads every path operation (not the `webhooks` section) into the operation table. */
export function buildOperationTable(document: OpenApiDocument): OperationEntry[] {
  const entries: Mutable<OperationEntry>[] = [];
  for (const [path, pathItem] of Object.entries(document.paths)) {
    const shared = ((pathItem.parameters as (Parameter | Ref)[] | undefined) ?? []).map((p) => resolve(document, p));
    for (const method of METHODS) {
      const operation = pathItem[method] as Operation | undefined;
      if (!operation) continue;
      if (!operation.operationId) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const parameters = [...shared, ...(operation.parameters ?? []).map((p) => resolve(document, p))];
      const hasHeader = (name: string) => parameters.some((p) => p.in === 'header' && p.name.toLowerCase() === name.toLowerCase() && p.required === true);
      const responses = Object.keys(operation.responses ?? {});
      const success = responses
        .filter((status) => /^[23]\d\d$/.test(status))
        .map(Number)
        .sort((a, b) => a - b);
      const requestBody = operation.requestBody ? resolve(document, operation.requestBody) : undefined;
      entries.push({
        operationId: operation.operationId,
        method,
        path,
        tag: operation.tags?.[0] ?? 'Default',
        auth: authOf(operation.security),
        scopes: (operation.security ?? []).filter((r) => 'oauth2' in r).map((r) => [...(r.oauth2 ?? [])]),
        fieldScopes: operation['x-field-scopes'] ?? {},
        requiresIdempotencyKey: hasHeader('Idempotency-Key'),
        requiresIfMatch: hasHeader('If-Match'),
        paged: parameters.some((p) => p.in === 'query' && p.name === 'cursor'),
        filters: parameters.filter((p) => p.in === 'query' && p['x-filter'] === true).map((p) => p.name),
        successStatus: success[0] ?? 200,
        requestMediaTypes: Object.keys(requestBody?.content ?? {}),
      });
    }
  }
  return entries.sort((a, b) => a.operationId.localeCompare(b.operationId));
}
