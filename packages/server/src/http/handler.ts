import type { components, OperationEntry, OperationId, operations } from '@svc/contract';
import { ApiError } from '../core/errors';
import { etagOf, requireCurrent, type TaggedResource } from '../core/etag';
import { rowIdOf } from '../core/ids';
import type { ListRequest, PageRequest, Pager } from '../core/paging';
import { eventTraceOf, type RequestTrace } from '../core/trace-context';
import type { ReadRoute } from '../db/read-routing';
import type { ReadAhead, Statement } from '../db/reads';
import type { Db } from '../db/transactions';
import { type Actor, anyVersion, type Precondition } from '../domain/common/actor';
import type { App } from '../platform/apps';
import type { Services } from '../services/container';
import type { Principal } from './bearer';

type Operation<K extends OperationId> = operations[K];
type ParametersOf<K extends OperationId> = Operation<K> extends { parameters: infer P } ? P : never;
type Part<P, Key extends string> = P extends { [k in Key]: infer V } ? V : P extends { [k in Key]?: infer V } ? V : never;
type OrEmpty<T> = [T] extends [never] ? Record<string, never> : [T] extends [undefined] ? Record<string, never> : NonNullable<T>;

export type PathParams<K extends OperationId> = OrEmpty<Part<ParametersOf<K>, 'path'>>;
export type QueryParams<K extends OperationId> = OrEmpty<Part<ParametersOf<K>, 'query'>>;

type ContentOf<R> = R extends { content: infer C } ? C[keyof C] : undefined;
export type RequestBody<K extends OperationId> =
  Operation<K> extends { requestBody: infer B }
    ? ContentOf<B>
    : Operation<K> extends { requestBody?: infer B }
      ? ContentOf<NonNullable<B>> | undefined
      : undefined;

type Responses<K extends OperationId> = Operation<K>['responses'];
type SuccessStatus = 200 | 201 | 202 | 204 | 302 | 304;
export type SuccessStatusOf<K extends OperationId> = Extract<keyof Responses<K>, SuccessStatus>;
export type ResponseBody<K extends OperationId, S extends keyof Responses<K>> = ContentOf<Responses<K>[S]>;

/** What a handler answers: one of the operation's documented success responses. */
export type HandlerResult<K extends OperationId> = {
  [S in SuccessStatusOf<K>]: {
    status: S;
    body: ResponseBody<K, S>;
    headers?: Record<string, string>;
  };
}[SuccessStatusOf<K>];

export type Execution = components['schemas']['Execution'];

/** Everything a handler may know about the request; it never sees Express itself. */
export interface HandlerContext<K extends OperationId> {
  readonly operation: OperationEntry & { readonly operationId: K };
  readonly requestId: string;
  /** The request's W3C trace (core/trace-context): the events its change writes carry it to their webhook deliveries. */
  readonly trace?: RequestTrace;
  /** When the request arrived (the injected clock), before any work: what "concurrent" is judged by. */
  readonly receivedAt: number;
  readonly params: PathParams<K>;
  readonly query: QueryParams<K>;
  readonly body: RequestBody<K>;
  /** Request headers, lower-cased names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** Who executed the request, once a bearer token was resolved (absent on OAuth endpoints). */
  readonly execution?: Execution;
  /** The access token's app, installation and store (store API operations). */
  readonly principal?: Principal;
  /** The client authenticated by HTTP Basic (OAuth operations with client authentication). */
  readonly client?: App;
  /** The domain: database, clock, rate limiter. */
  readonly services: Services;
  /**
   * The database this request's work runs on: inside the idempotency transaction for a POST that
   * takes `Idempotency-Key` (so the change and its stored response commit together), else the pool.
   * Domain calls take this, never `services.db`.
   */
  readonly db: Db;
  /** The server's HMAC keys (ETags, cursors), shared by every instance on one database. */
  readonly keys: ServerKeys;
  /** The date version the answer is served under (its `API-Version` header). */
  readonly apiVersion: string;
  /** The rows of the operation's first read, when they came with the token's ({@link Handler.firstRead}). */
  readonly readAhead?: ReadAhead;
  /** Where a list or report is read, when read replicas are configured (`db` is its database). */
  readonly reads?: ReadRoute;
}

export interface ServerKeys {
  readonly etag: Buffer;
  readonly cursor: Buffer;
}

export type Handler<K extends OperationId> = ((context: HandlerContext<K>) => Promise<HandlerResult<K>>) & {
  /**
   * An operation under an Idempotency-Key whose work waits on the network (webhooks.test sends a
   * request of up to 15 s) runs outside the key's transaction: inside, it would hold the database
   * (on SQLite its only connection) for as long as the receiver takes. Its writes commit as they
   * go, and its answer is stored once it has one.
   */
  readonly outsideTransaction?: true;
  /**
   * The operation's first read, from the request's path, query, store and pager (undefined when
   * they name nothing to read). It is read with the bearer token's statement (on PostgreSQL in the
   * same round trip), and the handler finds its rows in `context.readAhead`, which it hands to the
   * domain read that would have made them; they are used only once the token let the request
   * through, for the token's own store (docs/decisions/0066-postgresql-read-path.md).
   */
  readonly firstRead?: FirstRead<K>;
};

/** What an operation's first read is built from: the request's path and query, the token's store, and the pager that opens its cursor. */
export interface FirstReadRequest<K extends OperationId> {
  readonly params: PathParams<K>;
  readonly query: QueryParams<K>;
  readonly storeId: string;
  readonly pager: Pager;
}

/**
 * The statement an operation reads first. It may throw what its handler would answer (a bad cursor):
 * the request is then not read ahead, and the handler refuses it.
 */
export type FirstRead<K extends OperationId> = (request: FirstReadRequest<K>) => Statement | undefined;

/** A handler whose first read goes with the bearer token's statement ({@link Handler.firstRead}). */
export function readingFirst<K extends OperationId>(firstRead: FirstRead<K>, handler: (context: HandlerContext<K>) => Promise<HandlerResult<K>>): Handler<K> {
  return Object.assign(handler, { firstRead });
}

/** One handler per operationId: the generated registry has this type, so a missing or mistyped handler fails `tsc`. */
export type Handlers = { readonly [K in OperationId]: Handler<K> };

const NOT_IMPLEMENTED = Symbol('not implemented');

/** The handler every operation starts with: a 501 in the interface's error format. */
export function notImplemented<K extends OperationId>(operationId: K): Handler<K> {
  const stub: Handler<K> = async () => {
    throw new ApiError('NOT_IMPLEMENTED', `The operation ${operationId} is not implemented yet.`);
  };
  return Object.assign(stub, { [NOT_IMPLEMENTED]: true });
}

/** Whether a handler is still the generated stub (tests use it to know what to expect). */
export const isNotImplemented = (handler: unknown): boolean => typeof handler === 'function' && NOT_IMPLEMENTED in handler;

/** The client of an operation with client authentication (the router authenticated it before the handler ran). */
export function clientOf<K extends OperationId>(context: HandlerContext<K>): App {
  if (!context.client) throw new Error(`${context.operation.operationId} ran without an authenticated client`);
  return context.client;
}

/** The principal of a store API operation (the router resolved the bearer token before the handler ran). */
export function principalOf<K extends OperationId>(context: HandlerContext<K>): Principal {
  if (!context.principal) throw new Error(`${context.operation.operationId} ran without a bearer token`);
  return context.principal;
}

/** Who acts, from the access token, and when: the actor of every change the request makes. */
export function actorOf<K extends OperationId>(context: HandlerContext<K>): Actor {
  const { storeId, installationId } = principalOf(context);
  const actor = { storeId, installationId, now: context.services.clock.now() };
  return context.trace ? { ...actor, trace: eventTraceOf(context.trace) } : actor;
}

/** The store record a path id names, parsed once here; `notFound` when no row can have it (0, or beyond the id range). */
export function recordIdOf(pathId: string, notFound: () => ApiError): number {
  const id = rowIdOf(pathId);
  if (id === undefined) throw notFound();
  return id;
}

/** A list request as the domain takes it: the page asked for, and the cursor key and time that check its cursor. */
export function listRequestOf<K extends OperationId>(context: HandlerContext<K>, { limit, cursor }: PageRequest): ListRequest {
  const readOn = context.reads && (context.reads.servedBy === 'replica' ? context.reads.replica : 'primary');
  return { limit, cursor, pager: { key: context.keys.cursor, now: context.services.clock.now(), ...(readOn ? { readOn } : {}) } };
}

/**
 * The precondition of an operation whose spec takes `If-Match`: the current row's ETag must be
 * listed (412 PRECONDITION_FAILED with the current ETag when stale, 428 when the header is missing).
 */
export function ifMatchOf<K extends OperationId, Row>(context: HandlerContext<K>, tagOf: (row: Row) => TaggedResource): Precondition<Row> {
  return (current) => requireCurrent(context.keys.etag, context.headers['if-match'], tagOf(current));
}

/**
 * The precondition of an operation whose spec takes an optional `If-Match` (pages): checked as
 * `ifMatchOf` checks it when the header is sent, any version when it is not.
 */
export function ifMatchWhenSentOf<K extends OperationId, Row>(context: HandlerContext<K>, tagOf: (row: Row) => TaggedResource): Precondition<Row> {
  return context.headers['if-match'] === undefined ? anyVersion : ifMatchOf(context, tagOf);
}

/** The `ETag` header of a resource's current version. */
export function etagHeader<K extends OperationId>(context: HandlerContext<K>, resource: TaggedResource): Record<string, string> {
  return { ETag: etagOf(context.keys.etag, resource) };
}
