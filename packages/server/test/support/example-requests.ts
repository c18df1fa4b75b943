import fs from 'node:fs';
import { type OperationEntry, resolveLocalRef } from '@svc/contract';
import { bundledSpecPath } from '@svc/contract/node';

type Node = Record<string, unknown>;
const spec = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as Node;

const resolve = (node: unknown): Node => resolveLocalRef<Node>(spec, node);

/** A parameter of an operation as the spec declares it (references resolved). */
export interface DocumentedParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  example?: unknown;
  schema?: unknown;
}

const operationOf = (entry: OperationEntry): { pathItem: Node; operation: Node } => {
  const pathItem = resolve((spec.paths as Node)[entry.path]);
  return { pathItem, operation: pathItem[entry.method] as Node };
};

/** The operation's parameters, its path's included. */
export function documentedParameters(entry: OperationEntry): DocumentedParameter[] {
  const { pathItem, operation } = operationOf(entry);
  return [...((pathItem.parameters as unknown[]) ?? []), ...((operation.parameters as unknown[]) ?? [])].map(
    (parameter) => resolve(parameter) as unknown as DocumentedParameter,
  );
}

/** The first example of the operation's request body, in JSON when it takes JSON; undefined when it takes no body. */
export function exampleBody(entry: OperationEntry): { contentType: string; body: unknown } | undefined {
  const { operation } = operationOf(entry);
  if (!operation.requestBody) return undefined;
  const content = resolve(operation.requestBody).content as Node;
  const contentType = content['application/json'] ? 'application/json' : (Object.keys(content)[0] as string);
  const media = content[contentType] as Node;
  const examples = media.examples as Node | undefined;
  const first = examples ? resolve(Object.values(examples)[0]) : undefined;
  return { contentType, body: first ? first.value : media.example };
}

export interface ExampleRequest {
  url: string;
  headers: Record<string, string>;
  contentType?: string;
  body?: unknown;
}

/** A request built only from the spec's own examples: path, required query and headers, body. */
export function exampleRequest(entry: OperationEntry): ExampleRequest {
  let url = entry.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const parameter of documentedParameters(entry)) {
    const value = String(parameter.example);
    if (parameter.in === 'path') url = url.replace(`{${parameter.name}}`, encodeURIComponent(value));
    if (parameter.in === 'query' && parameter.required === true) query.set(parameter.name, value);
    if (parameter.in === 'header' && parameter.required === true) headers[parameter.name] = value;
  }
  const search = query.toString();
  const request: ExampleRequest = { url: search ? `${url}?${search}` : url, headers };
  const example = exampleBody(entry);
  if (example) {
    request.contentType = example.contentType;
    request.body = example.body;
  }
  return request;
}
