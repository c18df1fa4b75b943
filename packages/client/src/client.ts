import { type OperationEntry, operationTable } from '@svc/contract';
import createClient, { type ClientPathsWithMethod, type FetchResponse, type MaybeOptionalInit, type Middleware } from 'openapi-fetch';
import type { AccessTokenSource } from './credentials';
import { StoreApiError } from './errors';
import type { ClientPaths, ItemOf, PagedPath, PageOf, PageRequest } from './paths';
import { type TraceContextSource, traceHeaders } from './trace';
import { sendingFetch, type TransportOptions } from './transport';
import { API_VERSION_HEADER } from './versions';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

type RequiredKeys<T> = { [Key in keyof T]-?: object extends Pick<T, Key> ? never : Key }[keyof T];
type InitArgument<Init> = [RequiredKeys<Init>] extends [never] ? [init?: Init] : [init: Init];
/** Failures are thrown (`StoreApiError`), so a call that returns has its data. */
type Succeeded<Response> = Extract<Response, { data: unknown; error?: never }>;

/** An openapi-fetch method over the spec's paths whose answer always has `data`. */
export type StoreMethod<M extends Method> = <Path extends ClientPathsWithMethod<RawClient, M>, Init extends MaybeOptionalInit<ClientPaths[Path], M>>(
  path: Path,
  ...init: InitArgument<Init>
) => Promise<Succeeded<FetchResponse<Extract<ClientPaths[Path][M], Record<string, unknown>>, Init, `${string}/${string}`>>>;

type RawClient = ReturnType<typeof createClient<ClientPaths>>;

/** The client's settings; `fetch`, `retry`, `timeoutMs` and `appInfo` are the transport's (`TransportOptions`). */
export interface StoreClientOptions extends TransportOptions {
  /** Scheme, host and port of the service, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** A token, a function that returns the current one (called for every request), or a token manager (refreshes on 401). */
  accessToken?: AccessTokenSource;
  /**
   * The date version to call under, sent as the `API-Version` header on every request (a request's
   * own `params.header` still wins). Left out, the app's pinned version applies. Every answer names
   * the version that served it in its `API-Version` header.
   */
  apiVersion?: string;
  /**
   * The caller's W3C trace context, asked before every request and sent as `traceparent` and
   * `tracestate` (see `TraceContextSource` for OpenTelemetry). One request can also carry its own:
   * `client.GET(path, { params, headers: { traceparent } })`, which wins.
   */
  traceContext?: TraceContextSource;
}

/** Reads, changes and writes a resource under `If-Match`, reading again after a concurrent change (412). */
export interface EtagUpdate<Current, Result> {
  /** Reads the resource; its answer's `ETag` is what the write names. */
  read(): Promise<{ data: Current; response: Response }>;
  /** Writes the change made from what was read, with `If-Match: etag`. */
  write(current: Current, etag: string): Promise<Result>;
  /** How many times the whole read-write is tried before a 412 is thrown. Default 3. */
  attempts?: number;
}

/** The typed client: requests, answers and errors are checked by `tsc`; every failure throws a `StoreApiError`. */
export interface StoreClient {
  GET: StoreMethod<'get'>;
  POST: StoreMethod<'post'>;
  PUT: StoreMethod<'put'>;
  PATCH: StoreMethod<'patch'>;
  DELETE: StoreMethod<'delete'>;
  /** Every item of a keyset-paged list, page after page, each once, in the list's order. */
  paginate<Path extends PagedPath>(path: Path, request: PageRequest<Path>): AsyncGenerator<ItemOf<Path>, void, undefined>;
  /** Read, change, write under `If-Match`; a 412 (someone changed it in between) reads again, a bounded number of times. */
  updateWithEtag<Current, Result>(update: EtagUpdate<Current, Result>): Promise<Result>;
}

let routes: ReadonlyMap<string, OperationEntry> | undefined;
/**
 * The operations by method and path template, as openapi-fetch names them to middleware. Built on
 * the first request, not when the module loads: the package has no side effects at import
 * (`"sideEffects": false`), so a bundle that uses only `verifyWebhook` leaves the table out.
 */
const operationsByRoute = (): ReadonlyMap<string, OperationEntry> => {
  routes ??= new Map(Object.values(operationTable).map((operation) => [`${operation.method.toUpperCase()} ${operation.path}`, operation]));
  return routes;
};

/**
 * Gives every operation that takes an `Idempotency-Key` one (unless the caller chose it): its
 * retries then send the same key. Unlike stripe-node, which keys every POST (Stripe honours a key on
 * all of them), only the operations whose spec declares the header get one: a key the service does
 * not honour would make a repeat look safe when it is not.
 */
const idempotencyKeys: Middleware = {
  onRequest({ request, schemaPath }) {
    const operation = operationsByRoute().get(`${request.method} ${schemaPath}`);
    if (operation?.requiresIdempotencyKey && !request.headers.has('Idempotency-Key')) request.headers.set('Idempotency-Key', globalThis.crypto.randomUUID());
    return request;
  },
};

const DEFAULT_ETAG_ATTEMPTS = 3;

/** A typed client for every path of the spec. */
export function createStoreClient(options: StoreClientOptions): StoreClient {
  const raw = createClient<ClientPaths>({
    baseUrl: options.baseUrl,
    ...(options.apiVersion === undefined ? {} : { headers: { [API_VERSION_HEADER]: options.apiVersion } }),
    fetch: sendingFetch(options, options.accessToken),
  });
  raw.use(idempotencyKeys);
  if (options.traceContext) raw.use(traceHeaders(options.traceContext));
  // The error branch of openapi-fetch's answer never occurs: sendingFetch throws every failure.
  const client = {
    GET: raw.GET as unknown as StoreMethod<'get'>,
    POST: raw.POST as unknown as StoreMethod<'post'>,
    PUT: raw.PUT as unknown as StoreMethod<'put'>,
    PATCH: raw.PATCH as unknown as StoreMethod<'patch'>,
    DELETE: raw.DELETE as unknown as StoreMethod<'delete'>,
  };
  return {
    ...client,
    async *paginate<Path extends PagedPath>(path: Path, request: PageRequest<Path>) {
      const filters = request.params.query ?? {};
      let cursor: string | undefined;
      do {
        const query = cursor === undefined ? filters : { ...filters, cursor };
        const { data } = (await raw.GET(path as never, { params: { ...request.params, query } } as never)) as { data: PageOf<Path> & ListPage<ItemOf<Path>> };
        yield* data.data;
        cursor = data.meta.has_more && data.meta.next_cursor !== null ? data.meta.next_cursor : undefined;
      } while (cursor !== undefined);
    },
    async updateWithEtag<Current, Result>(update: EtagUpdate<Current, Result>): Promise<Result> {
      const attempts = update.attempts ?? DEFAULT_ETAG_ATTEMPTS;
      for (let attempt = 1; ; attempt += 1) {
        const { data, response } = await update.read();
        const etag = response.headers.get('etag');
        if (etag === null) throw new StoreApiError({ status: response.status, code: 'UNEXPECTED_RESPONSE', message: 'The read answered no ETag.' });
        try {
          return await update.write(data, etag);
        } catch (error) {
          if (!(error instanceof StoreApiError && error.code === 'PRECONDITION_FAILED') || attempt >= attempts) throw error;
        }
      }
    },
  };
}

interface ListPage<Item> {
  data: readonly Item[];
  meta: { has_more: boolean; next_cursor: string | null };
}
