import { resolveLocalRef } from '../../packages/contract/src/refs';
import type { OpenApiDocument } from './bundle';
import { buildOperationTable, type OperationEntry } from './operation-table';

type Ref = { $ref: string };
type QueryValue = string | number | boolean;
type Example = { value?: unknown };
type Parameter = { name: string; in: string; required?: boolean; example?: unknown; examples?: Record<string, Example | Ref>; schema?: { example?: unknown } };
type MediaType = { example?: unknown; examples?: Record<string, Example | Ref> };
type Operation = { parameters?: (Parameter | Ref)[]; requestBody?: { content?: Record<string, MediaType> } | Ref };

/** Where the samples are sent when `SVC_URL` is not set: the spec's server default, which is what `pnpm start` listens on. */
export const SAMPLE_BASE_URL = 'http://localhost:3000';
/**
 * The values a reader supplies, from the environment the first `pnpm start` prints as an `export`
 * line: the service's base URL, the store and token, and an app's client credentials.
 */
export const SAMPLE_VARIABLES = {
  baseUrl: 'SVC_URL',
  storeId: 'STORE_ID',
  accessToken: 'SVC_TOKEN',
  clientId: 'CLIENT_ID',
  clientSecret: 'CLIENT_SECRET',
} as const;
/** A fresh key for every send, made by Node, which a reader of these docs has (`uuidgen` is missing on many machines). */
const SHELL_IDEMPOTENCY_KEY = `$(node -p 'crypto.randomUUID()')`;
/** The media type samples send: JSON, which every operation with a body takes (`/oauth/token` takes a form too). */
const JSON_MEDIA_TYPE = 'application/json';
/** The query parameters a sample sends besides the required ones: a page size shows that the list is paged. */
const SHOWN_OPTIONAL_QUERY = new Set(['limit']);

/**
 * One operation's sample request, made from the spec's own examples: the code samples are written
 * from it, and the samples test sends it to a real server. The store id is the reader's (a token
 * acts for one store only), every other value is the operation's example.
 */
export interface SampleRequest {
  readonly operation: OperationEntry;
  readonly pathParameters: Readonly<Record<string, string>>;
  /** As the spec's examples type them: the URL carries them as text, the typed client as they are. */
  readonly query: Readonly<Record<string, QueryValue>>;
  /** Header parameters other than `Idempotency-Key`, which every sample makes fresh. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

function exampleOf(holder: { example?: unknown; examples?: Record<string, Example | Ref> }, document: OpenApiDocument): unknown {
  if (holder.example !== undefined) return holder.example;
  const first = Object.values(holder.examples ?? {})[0];
  return first === undefined ? undefined : resolveLocalRef<Example>(document, first).value;
}

function parameterExample(parameter: Parameter, document: OpenApiDocument, where: string): QueryValue {
  const example = exampleOf(parameter, document) ?? parameter.schema?.example;
  if (typeof example !== 'string' && typeof example !== 'number' && typeof example !== 'boolean') {
    throw new Error(`${where}: the ${parameter.in} parameter ${parameter.name} has no example to make a code sample from.`);
  }
  return example;
}

/** The sample request of every path operation, in the operation table's order. */
export function sampleRequests(document: OpenApiDocument): SampleRequest[] {
  return buildOperationTable(document).map((operation) => {
    const pathItem = document.paths[operation.path] ?? {};
    const spec = pathItem[operation.method] as Operation;
    const where = `${operation.method.toUpperCase()} ${operation.path}`;
    const parameters = [...((pathItem.parameters as (Parameter | Ref)[] | undefined) ?? []), ...(spec.parameters ?? [])].map((p) =>
      resolveLocalRef<Parameter>(document, p),
    );
    const pathParameters: Record<string, string> = {};
    const query: Record<string, QueryValue> = {};
    const headers: Record<string, string> = {};
    for (const parameter of parameters) {
      if (parameter.in === 'path')
        pathParameters[parameter.name] = parameter.name === 'storeId' ? `$${SAMPLE_VARIABLES.storeId}` : String(parameterExample(parameter, document, where));
      else if (parameter.in === 'query' && (parameter.required === true || SHOWN_OPTIONAL_QUERY.has(parameter.name)))
        query[parameter.name] = parameterExample(parameter, document, where);
      else if (parameter.in === 'header' && parameter.required === true && parameter.name !== 'Idempotency-Key')
        headers[parameter.name] = String(parameterExample(parameter, document, where));
    }
    const requestBody = spec.requestBody ? resolveLocalRef<{ content?: Record<string, MediaType> }>(document, spec.requestBody) : undefined;
    const media = requestBody?.content?.[JSON_MEDIA_TYPE];
    if (requestBody && !media) throw new Error(`${where}: a code sample needs a JSON request body.`);
    const body = media ? exampleOf(media, document) : undefined;
    if (media && body === undefined) throw new Error(`${where}: the request body has no example to make a code sample from.`);
    return { operation, pathParameters, query, headers, ...(media ? { body } : {}) };
  });
}

/** The path with its parameters filled in; the store id stays a shell variable. */
export function samplePath(request: SampleRequest): string {
  const path = request.operation.path.replace(/\{(\w+)\}/g, (_, name: string) => request.pathParameters[name] ?? `{${name}}`);
  const query = new URLSearchParams(Object.entries(request.query).map(([name, value]): [string, string] => [name, String(value)])).toString();
  return query ? `${path}?${query}` : path;
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

export function curlSample(request: SampleRequest): string {
  const { operation } = request;
  const lines = [`curl -X ${operation.method.toUpperCase()} "\${${SAMPLE_VARIABLES.baseUrl}:-${SAMPLE_BASE_URL}}${samplePath(request)}"`];
  if (operation.auth === 'bearer') lines.push(`-H "Authorization: Bearer $${SAMPLE_VARIABLES.accessToken}"`);
  if (operation.auth === 'client') lines.push(`-u "$${SAMPLE_VARIABLES.clientId}:$${SAMPLE_VARIABLES.clientSecret}"`);
  if (operation.requiresIdempotencyKey) lines.push(`-H "Idempotency-Key: ${SHELL_IDEMPOTENCY_KEY}"`);
  for (const [name, value] of Object.entries(request.headers)) lines.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  if (request.body !== undefined) lines.push(`-H 'Content-Type: ${JSON_MEDIA_TYPE}'`, `--data ${shellQuote(JSON.stringify(request.body))}`);
  return lines.join(' \\\n  ');
}

const quoted = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
const keyOf = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : quoted(name));

/** A JSON value as TypeScript source in the style of the client's README: bare keys, single quotes. */
function tsLiteral(value: unknown, indent: string, inline: boolean): string {
  if (typeof value === 'string') return quoted(value);
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const inner = `${indent}  `;
  const items = Array.isArray(value)
    ? value.map((item) => tsLiteral(item, inner, inline))
    : Object.entries(value).map(([name, item]) => `${keyOf(name)}: ${tsLiteral(item, inner, inline)}`);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{ ', ' }'];
  if (items.length === 0) return Array.isArray(value) ? '[]' : '{}';
  const flat = Array.isArray(value) ? `[${items.join(', ')}]` : `${open}${items.join(', ')}${close}`;
  if (inline || flat.length + indent.length <= 100) return flat;
  return `${open.trim()}\n${items.map((item) => `${inner}${item},`).join('\n')}\n${indent}${close.trim()}`;
}

export function typeScriptSample(request: SampleRequest): string {
  const { operation } = request;
  const storeIdFromEnvironment = `process.env.${SAMPLE_VARIABLES.storeId} ?? ''`;
  const pathEntries = Object.entries(request.pathParameters).map(([name, value]) =>
    name === 'storeId' ? `storeId: ${storeIdFromEnvironment}` : `${keyOf(name)}: ${quoted(value)}`,
  );
  const params = [
    pathEntries.length > 0 ? `path: { ${pathEntries.join(', ')} }` : undefined,
    Object.keys(request.query).length > 0 ? `query: ${tsLiteral(request.query, '', true)}` : undefined,
    Object.keys(request.headers).length > 0 ? `header: ${tsLiteral(request.headers, '', true)}` : undefined,
  ].filter((entry): entry is string => entry !== undefined);
  const basic = `\`Basic \${btoa(\`\${process.env.${SAMPLE_VARIABLES.clientId}}:\${process.env.${SAMPLE_VARIABLES.clientSecret}}\`)}\``;
  const init = [
    params.length > 0 ? `params: { ${params.join(', ')} }` : undefined,
    request.body !== undefined ? `body: ${tsLiteral(request.body, '  ', false)}` : undefined,
    operation.auth === 'client' ? `headers: { Authorization: ${basic} }` : undefined,
  ].filter((entry): entry is string => entry !== undefined);
  const token = operation.auth === 'bearer' ? `, accessToken: process.env.${SAMPLE_VARIABLES.accessToken}` : '';
  const call = `await client.${operation.method.toUpperCase()}('${operation.path}'${init.length > 0 ? `, {\n  ${init.join(',\n  ')},\n}` : ''})`;
  return [
    `import { createStoreClient } from '@svc/client';`,
    '',
    `const client = createStoreClient({ baseUrl: process.env.${SAMPLE_VARIABLES.baseUrl} ?? '${SAMPLE_BASE_URL}'${token} });`,
    // A failure throws a StoreApiError, so what returns is the operation's documented success.
    `const { data, response } = ${call};`,
    'console.log(response.status, data);',
  ].join('\n');
}

/** The bundled document with a curl and a TypeScript sample on every path operation (`x-codeSamples`, which Redoc shows). */
export function withCodeSamples(document: OpenApiDocument): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = { ...document.paths };
  for (const request of sampleRequests(document)) {
    const { path, method } = request.operation;
    const pathItem = { ...paths[path] };
    pathItem[method] = {
      ...(pathItem[method] as Record<string, unknown>),
      'x-codeSamples': [
        { lang: 'Shell', label: 'curl', source: curlSample(request) },
        { lang: 'TypeScript', label: '@svc/client', source: typeScriptSample(request) },
      ],
    };
    paths[path] = pathItem;
  }
  return { ...document, paths };
}
