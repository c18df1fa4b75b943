import type { Request, RequestHandler, Response } from 'express';
import { type DestinationStream, type Logger, pino } from 'pino';
import pretty from 'pino-pretty';
import type { Environment, LogLevel } from '../core/config';
import type { ErrorCode } from '../core/errors';
import { operationIdOf } from './matched-operation';
import { callerRequestIdOf, requestIdOf, traceOf } from './request-context';

export type { Logger };

/** Name, message and stack only: other properties of an error (a driver's `detail`, a request) may hold data. */
const errorFields = (error: Error) => ({ type: error.name, message: error.message, stack: error.stack });

/** Where log lines go: a terminal gets them pretty-printed, anything else one JSON document a line. */
export type LogOutput = DestinationStream & { isTTY?: boolean };

/**
 * The service's logger: JSON lines, or pino-pretty's readable form when a person watches a terminal
 * outside production (a production terminal still gets JSON, so what it shows is what is collected).
 */
export function createLogger(settings: { level: LogLevel; environment: Environment }, output: LogOutput): Logger {
  const readable = settings.environment !== 'production' && output.isTTY === true;
  const destination = readable
    ? pretty({ destination: output, sync: true, singleLine: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' })
    : output;
  return pino({ level: settings.level, serializers: { err: errorFields } }, destination);
}

/**
 * A file descriptor or path written in the background: lines that come while a write is under way
 * go out together with the next one (under load, few system calls per many lines), and a quiet
 * server's line goes out at once, not when some buffer fills. pino flushes it when the process exits.
 */
export const bufferedOutput = (dest: number | string): LogOutput => pino.destination({ dest, sync: false, minLength: 0 });

/** For apps whose logs nobody reads (most tests, tools). */
export const silentLogger = (): Logger => pino({ level: 'silent' });

/** Who the request acted for: the bearer token's principal, or the OAuth client. */
export interface LoggedCaller {
  appId: string;
  storeId?: string;
  installationId?: string;
}

/** What the edge learns while serving a request and the request's line reports when it finishes. */
interface LogNotes {
  caller?: LoggedCaller;
  errorCode?: ErrorCode;
  /** A failure the service did not expect: the line is written at level error, with its stack. */
  unexpected?: Error;
}

const notesOf = (res: Response): LogNotes => res.locals as LogNotes;

export function noteCaller(res: Response, caller: LoggedCaller): void {
  notesOf(res).caller = caller;
}

/** A failure the service did not expect: its request's line is written at level error, with the stack. */
export function noteUnexpectedError(res: Response, error: unknown): void {
  notesOf(res).unexpected = error instanceof Error ? error : new Error(String(error));
}

/** An error answer: its code goes in the request's line; only INTERNAL is worth the stack. */
export function noteErrorAnswer(res: Response, code: ErrorCode, error: unknown): void {
  notesOf(res).errorCode = code;
  if (code === 'INTERNAL') noteUnexpectedError(res, error);
}

/**
 * The ids every line about a request carries, so that it joins the lines of a load balancer, an
 * app and a tracing backend: the request's id (`meta.request_id`), the caller's `X-Request-Id` when
 * it was kept, and the W3C trace and span ids.
 */
export function requestIds(res: Response): { request_id: string; caller_request_id?: string; trace_id?: string; span_id?: string } {
  const trace = traceOf(res);
  return { request_id: requestIdOf(res), caller_request_id: callerRequestIdOf(res), trace_id: trace?.traceId, span_id: trace?.spanId };
}

/** The Express route template (`/dashboard/login`), else the mount (`/docs`): a request that is no operation. */
function routeTemplateOf(req: Request): string | undefined {
  const template = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof template === 'string') return `${req.baseUrl}${template}`;
  return req.baseUrl === '' ? undefined : req.baseUrl;
}

/**
 * Names what was asked without the URL, whose query can carry an OAuth `code`, `state` or a token:
 * the operationId, else the Express route template (`/dashboard/login`), else the mount (`/docs`).
 */
export function routeOf(req: Request): { operation_id: string } | { route?: string } {
  const operationId = operationIdOf(req);
  return operationId !== undefined ? { operation_id: operationId } : { route: routeTemplateOf(req) };
}

/**
 * The request's line: one object literal of every field, those without a value left undefined
 * (pino leaves them out), so that every line has the same shape and no object is spread per request.
 */
function lineOf(req: Request, res: Response, durationMs: number) {
  const { caller, errorCode } = notesOf(res);
  const trace = traceOf(res);
  const operationId = operationIdOf(req);
  return {
    request_id: requestIdOf(res),
    caller_request_id: callerRequestIdOf(res),
    trace_id: trace?.traceId,
    span_id: trace?.spanId,
    method: req.method,
    operation_id: operationId,
    route: operationId === undefined ? routeTemplateOf(req) : undefined,
    status: res.statusCode,
    duration_ms: durationMs,
    store_id: caller?.storeId,
    installation_id: caller?.installationId,
    app_id: caller?.appId,
    err_code: errorCode,
  };
}

/**
 * One line per request when its response finishes (or its connection closes first), under the
 * request's own id: method, operation, status, duration, the caller and the error code. Lines are
 * built from named fields only, never from the request, so credentials cannot reach the log by way of
 * a header, cookie or body. One listener and one line per request, no per-request child logger: the
 * line costs what the fields cost (pnpm bench).
 */
export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    // 'close' follows 'finish' on a completed response and also comes alone when the client goes away.
    res.once('close', () => {
      const line = lineOf(req, res, Math.round((performance.now() - started) * 1000) / 1000);
      const { unexpected } = notesOf(res);
      if (unexpected) logger.error({ ...line, err: unexpected }, 'request errored');
      else logger.info(line, res.writableFinished ? 'request completed' : 'request aborted');
    });
    next();
  };
}
