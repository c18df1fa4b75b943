import fs from 'node:fs';
import { bundledSpecPath, type OperationEntry, resolveLocalRef } from '@svc/contract';

type Node = Record<string, unknown>;
const spec = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as Node;

const resolve = (node: unknown): Node => resolveLocalRef<Node>(spec, node);

export interface ExampleRequest {
  url: string;
  headers: Record<string, string>;
  contentType?: string;
  body?: unknown;
}

/** A request built only from the spec's own examples: path, required query and headers, body. */
export function exampleRequest(entry: OperationEntry): ExampleRequest {
  const pathItem = resolve((spec.paths as Node)[entry.path]);
  const operation = pathItem[entry.method] as Node;
  const parameters = [...((pathItem.parameters as unknown[]) ?? []), ...((operation.parameters as unknown[]) ?? [])].map(resolve);
  let url = entry.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const parameter of parameters) {
    const value = String(parameter.example);
    if (parameter.in === 'path') url = url.replace(`{${String(parameter.name)}}`, encodeURIComponent(value));
    if (parameter.in === 'query' && parameter.required === true) query.set(String(parameter.name), value);
    if (parameter.in === 'header' && parameter.required === true) headers[String(parameter.name)] = value;
  }
  const search = query.toString();
  const request: ExampleRequest = { url: search ? `${url}?${search}` : url, headers };
  if (operation.requestBody) {
    const content = resolve(operation.requestBody).content as Node;
    const contentType = content['application/json'] ? 'application/json' : (Object.keys(content)[0] as string);
    const media = content[contentType] as Node;
    const examples = media.examples as Node | undefined;
    const first = examples ? resolve(Object.values(examples)[0]) : undefined;
    request.contentType = contentType;
    request.body = first ? first.value : media.example;
  }
  return request;
}
