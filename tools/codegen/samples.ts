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
/** The media type samples send: JSON, which every operation with a body takes (`/oauth/token` takes a form too). */
export const JSON_MEDIA_TYPE = 'application/json';
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
  /** Header parameters other than `Idempotency-Key`, which every sample makes fresh, and `If-Match`, which it reads. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * For an update that requires `If-Match`: the path whose GET answers the `ETag` to send, the
   * resource itself or the one it belongs to (a product's content is the product's). A sample reads
   * it first, as an app must: an ETag written into a sample would be stale for every reader.
   */
  readonly etagFrom?: string;
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

/** Headers a sample makes itself rather than copying the example: a fresh key, the ETag it reads. */
const MADE_BY_THE_SAMPLE = new Set(['Idempotency-Key', 'If-Match']);

/** Where an update's `ETag` is read: its own path when it has a GET, else the path it is under. */
function etagSourceOf(document: OpenApiDocument, path: string, where: string): string {
  if ((document.paths[path] as Record<string, unknown> | undefined)?.get !== undefined) return path;
  const parent = path.slice(0, path.lastIndexOf('/'));
  if ((document.paths[parent] as Record<string, unknown> | undefined)?.get === undefined) {
    throw new Error(`${where}: requires If-Match, but neither it nor ${parent} has a GET to read the ETag from.`);
  }
  return parent;
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
      else if (parameter.in === 'header' && parameter.required === true && !MADE_BY_THE_SAMPLE.has(parameter.name))
        headers[parameter.name] = String(parameterExample(parameter, document, where));
    }
    const etagFrom = operation.requiresIfMatch ? etagSourceOf(document, operation.path, where) : undefined;
    const requestBody = spec.requestBody ? resolveLocalRef<{ content?: Record<string, MediaType> }>(document, spec.requestBody) : undefined;
    const media = requestBody?.content?.[JSON_MEDIA_TYPE];
    if (requestBody && !media) throw new Error(`${where}: a code sample needs a JSON request body.`);
    const body = media ? exampleOf(media, document) : undefined;
    if (media && body === undefined) throw new Error(`${where}: the request body has no example to make a code sample from.`);
    return { operation, pathParameters, query, headers, ...(etagFrom ? { etagFrom } : {}), ...(media ? { body } : {}) };
  });
}

/** A path template with the request's parameters filled in; the store id stays a shell variable. */
export const filledPath = (request: SampleRequest, template: string = request.operation.path): string =>
  template.replace(/\{(\w+)\}/g, (_, name: string) => request.pathParameters[name] ?? `{${name}}`);

/** The request's query as text: each value as the URL carries it. */
export const queryText = (request: SampleRequest): string =>
  new URLSearchParams(Object.entries(request.query).map(([name, value]): [string, string] => [name, String(value)])).toString();

/** The path with its parameters filled in and its query; the store id stays a shell variable. */
export function samplePath(request: SampleRequest): string {
  const query = queryText(request);
  return query ? `${filledPath(request)}?${query}` : filledPath(request);
}
