import type { Request, RequestHandler, Response } from 'express';
import { type DestinationStream, type Logger, pino } from 'pino';
import { pinoHttp } from 'pino-http';
import pretty from 'pino-pretty';
import type { Environment, LogLevel } from '../core/config';
import type { ErrorCode } from '../core/errors';
import { requestIdOf } from './request-context';

export type { Logger };

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
  return pino({ level: settings.level }, destination);
}

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
}

const notesOf = (res: Response): LogNotes => res.locals as LogNotes;

export function noteCaller(res: Response, caller: LoggedCaller): void {
  notesOf(res).caller = caller;
}

/** A failure the service did not expect: its request's line is written at level error, with the stack. */
export function noteUnexpectedError(res: Response, error: unknown): void {
  res.err = error instanceof Error ? error : new Error(String(error));
}

/** An error answer: its code goes in the request's line; only INTERNAL is worth the stack. */
export function noteErrorAnswer(res: Response, code: ErrorCode, error: unknown): void {
  notesOf(res).errorCode = code;
  if (code === 'INTERNAL') noteUnexpectedError(res, error);
}

/** The spec validator's match (`req.openapi`), absent for the dashboard, the docs and unknown paths. */
const operationIdOf = (req: Request): string | undefined => (req as Request & { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;

/**
 * Names what was asked without the URL, whose query can carry an OAuth `code`, `state` or a token:
 * the operationId, else the Express route template (`/dashboard/login`), else the mount (`/docs`).
 */
function routeOf(req: Request): { operation_id: string } | { route?: string } {
  const operationId = operationIdOf(req);
  if (operationId !== undefined) return { operation_id: operationId };
  const template = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof template === 'string') return { route: `${req.baseUrl}${template}` };
  return req.baseUrl === '' ? {} : { route: req.baseUrl };
}

function lineOf(req: Request, res: Response, timing: { duration_ms: number }) {
  const { caller, errorCode } = notesOf(res);
  return {
    method: req.method,
    ...routeOf(req),
    status: res.statusCode,
    duration_ms: timing.duration_ms,
    store_id: caller?.storeId,
    installation_id: caller?.installationId,
    app_id: caller?.appId,
    err_code: errorCode,
  };
}

/** Name, message and stack only: other properties of an error (a driver's `detail`, a request) may hold data. */
const errorFields = (error: Error) => ({ type: error.name, message: error.message, stack: error.stack });

/** Nothing of the raw request or response is written: no URL, no headers, no cookies, no body. */
const nothing = (): undefined => undefined;

/**
 * One line per request when its response finishes (pino-http), under the request's own id: method,
 * operation, status, duration, the caller and the error code. Lines are built from named fields only,
 * never from the request, so credentials cannot reach the log by way of a header, cookie or body.
 */
export function requestLog(logger: Logger): RequestHandler {
  return pinoHttp<Request, Response>({
    logger,
    genReqId: (_req, res) => requestIdOf(res),
    customAttributeKeys: { reqId: 'request_id', responseTime: 'duration_ms' },
    // Both loggers are the bare child with the request id: the raw request is never bound.
    quietReqLogger: true,
    quietResLogger: true,
    wrapSerializers: false,
    serializers: { req: nothing, res: nothing, err: errorFields },
    customLogLevel: (_req, res) => (res.err ? 'error' : 'info'),
    customSuccessObject: (req, res, timing: { duration_ms: number }) => lineOf(req, res, timing),
    // pino-http invents an error for any 5xx; only a noted one (res.err) is a failure with a stack worth keeping.
    customErrorObject: (req, res, _error, timing: { duration_ms: number }) => ({ ...lineOf(req, res, timing), err: res.err }),
  });
}
