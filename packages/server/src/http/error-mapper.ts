import { ApiError, type ErrorBody, type ErrorCode, type ErrorDetail, isApiError } from '../core/errors';
import { ownValue } from '../core/records';
import { isDatabaseUnavailable } from '../db/availability';
import { methodNotAllowed } from './allowed-methods';

/** A validation problem as express-openapi-validator reports it (`/body/name`, `/query/limit`, ...). */
interface ValidatorProblem {
  path?: string;
  message?: string;
  errorCode?: string;
}

interface ValidatorError {
  status: number;
  errors: ValidatorProblem[];
  message?: string;
}

/** A failure to read the body (body-parser, raw-body, zlib): an http-errors error with a status, `type` on most. */
interface BodyReadError {
  status: number;
  type?: string;
}

/** Which rules to apply: the store API and the OAuth endpoints name validation failures differently. */
export type ErrorSurface = 'store' | 'oauth';

const MAX_DETAILS = 50;
const LOCATIONS: Record<string, ErrorDetail['location']> = {
  body: 'body',
  query: 'query',
  params: 'path',
  path: 'path',
  headers: 'header',
  header: 'header',
};

const hasStatus = (error: unknown): error is { status: number; errors?: unknown } => typeof (error as { status?: unknown } | null)?.status === 'number';

/** The validator's errors always list their problems; the body readers' never do. */
const isValidatorError = (error: unknown): error is ValidatorError => hasStatus(error) && Array.isArray(error.errors);
const isBodyReadError = (error: unknown): error is BodyReadError => hasStatus(error) && !Array.isArray(error.errors);

/** `/body/name` → {location: body, field: /name}; `/query/limit` → {location: query, field: limit}. */
export function toDetail(problem: ValidatorProblem): ErrorDetail {
  const [, area = '', ...rest] = (problem.path ?? '').split('/');
  const location = ownValue(LOCATIONS, area) ?? 'body';
  const field = location === 'body' ? `/${rest.join('/')}` : rest.join('/');
  return { location, field: field.slice(0, 256), message: (problem.message ?? 'is not valid').slice(0, 512) };
}

const isUnknownField = (p: ValidatorProblem) =>
  /^(additionalProperties|unevaluatedProperties)\./.test(p.errorCode ?? '') || /^Unknown query parameter/.test(p.message ?? '');
const isMissingHeader = (name: string) => (p: ValidatorProblem) => p.path?.toLowerCase() === `/headers/${name}` && /^required\./.test(p.errorCode ?? '');
/** Sent, but with nothing in it (HTTP trims the spaces around a value, so spaces alone are nothing too). */
const isEmptyHeader = (name: string) => (p: ValidatorProblem) => p.path?.toLowerCase() === `/headers/${name}` && /^minLength\./.test(p.errorCode ?? '');

const isBodyField = (field: string) => (p: ValidatorProblem) => p.path === `/body/${field}`;
const hasWrongPrefix = (p: ValidatorProblem) => (isBodyField('code')(p) || isBodyField('refresh_token')(p)) && /^(pattern|minLength)\./.test(p.errorCode ?? '');

/** The request's query as parsed (a repeated parameter is an array), and its operation's filters. */
export interface QueryOfRequest {
  readonly query: Readonly<Record<string, unknown>>;
  /** The operation's `x-filter: true` query parameters (the operation table's `filters`). */
  readonly filters: readonly string[];
  /** The request's method and path, which a 405 names. */
  readonly method?: string;
  readonly path?: string;
}

/**
 * A bad value of a filter the spec marks `x-filter: true`. Paging and the analytics range are not
 * filters (a bad one is VALIDATION_FAILED, as their operations say). A repeated filter (an array) is
 * a malformed request, not a bad value; a type error on one value sent once (`rating=five`) is a bad
 * value like any other.
 */
const isBadFilterValue =
  ({ query, filters }: QueryOfRequest) =>
  (p: ValidatorProblem) => {
    const [, area, name = ''] = (p.path ?? '').split('/');
    if (area !== 'query' || !filters.includes(name)) return false;
    return !/^type\./.test(p.errorCode ?? '') || typeof ownValue(query, name) === 'string';
  };

/**
 * OAuth endpoints: credentials or unknown keys in the body are INVALID_REQUEST; an unknown
 * grant_type is INVALID_GRANT_TYPE and a code or refresh token of the wrong form INVALID_GRANT,
 * as the interface's OAuth codes say; anything else malformed is INVALID_REQUEST.
 */
function classifyOAuthProblems(problems: ValidatorProblem[], details: ErrorDetail[]): ApiError {
  if (problems.some(isUnknownField))
    return new ApiError('INVALID_REQUEST', 'The request has a parameter or body key this endpoint does not take.', { details });
  // Authorize checks the closed parameter set (missing, repeated: a query value that is not a string)
  // before response_type, and response_type before the other formats.
  const setBroken = problems.some((p) => p.path?.startsWith('/query/') && /^(required|type)\./.test(p.errorCode ?? ''));
  if (!setBroken && problems.some((p) => p.path === '/query/response_type' && /^enum\./.test(p.errorCode ?? ''))) {
    return new ApiError('UNSUPPORTED_RESPONSE_TYPE', 'response_type must be code: only the authorization-code flow is supported.', { details });
  }
  if (problems.some((p) => isBodyField('grant_type')(p) && /^enum\./.test(p.errorCode ?? ''))) {
    return new ApiError('INVALID_GRANT_TYPE', 'grant_type must be authorization_code or refresh_token.', { details });
  }
  if (problems.some(hasWrongPrefix)) return new ApiError('INVALID_GRANT', 'The code or refresh token is not of the expected form.', { details });
  return new ApiError('INVALID_REQUEST', 'The request is not valid.', { details });
}

function classifyRequestProblems(problems: ValidatorProblem[], surface: ErrorSurface, request: QueryOfRequest): ApiError {
  const details = problems.slice(0, MAX_DETAILS).map(toDetail);
  if (surface === 'oauth') return classifyOAuthProblems(problems, details);
  if (problems.some(isMissingHeader('idempotency-key'))) {
    return new ApiError('IDEMPOTENCY_KEY_REQUIRED', 'This request needs an Idempotency-Key header.');
  }
  if (problems.some(isEmptyHeader('idempotency-key'))) {
    return new ApiError(
      'IDEMPOTENCY_KEY_REQUIRED',
      'The Idempotency-Key header is empty: send 1 to 128 characters of your own, one key per intended change (a UUID will do).',
      { details: [{ location: 'header', field: 'Idempotency-Key', message: 'is empty' }] },
    );
  }
  if (problems.some(isMissingHeader('if-match'))) {
    return new ApiError('PRECONDITION_REQUIRED', "This update needs an If-Match header with the resource's ETag.");
  }
  const unknown = problems.filter(isUnknownField);
  if (unknown.length > 0) {
    const names = unknown.map((p) => toDetail(p).field).join(', ');
    return new ApiError('UNKNOWN_FIELD', `Unknown field(s): ${names}.`, {
      details: unknown.slice(0, MAX_DETAILS).map((p) => ({ ...toDetail(p), message: 'is not a known field' })),
    });
  }
  if (problems.length > 0 && problems.every(isBadFilterValue(request))) {
    const names = [...new Set(problems.map((p) => toDetail(p).field))].join(', ');
    return new ApiError('INVALID_FILTER', `Invalid value for the filter(s) ${names}.`, { details });
  }
  return new ApiError('VALIDATION_FAILED', 'The request is not valid.', { details });
}

function fromValidator(error: ValidatorError, surface: ErrorSurface, exposeInternals: boolean, request: QueryOfRequest): ApiError {
  const byStatus: Record<string, [ErrorCode, string]> = {
    404: ['NOT_FOUND', 'No such endpoint.'],
    405: ['METHOD_NOT_ALLOWED', 'This endpoint does not take that method.'],
    413: ['PAYLOAD_TOO_LARGE', 'The request body is larger than 65536 bytes.'],
    415: ['UNSUPPORTED_MEDIA_TYPE', 'The body has a Content-Type this endpoint does not accept.'],
  };
  if (error.status === 400) return classifyRequestProblems(error.errors, surface, request);
  const refusedMethod = error.status === 405 && request.method && request.path ? methodNotAllowed(request.method, request.path) : undefined;
  if (refusedMethod) return refusedMethod;
  const known = ownValue(byStatus, String(error.status));
  if (known) return new ApiError(...known);
  return internal(error, exposeInternals);
}

const unreadableBody = (surface: ErrorSurface, message: string, detail: string) =>
  new ApiError(surface === 'oauth' ? 'INVALID_REQUEST' : 'VALIDATION_FAILED', message, { details: [{ location: 'body', field: '/', message: detail }] });

/**
 * Body-reading failures are the client's: too large (413), an encoding or charset not taken (415),
 * not JSON, or bytes that are not what the headers say (a "gzip" body that is not gzip, a length
 * other than `Content-Length`): 400. Anything else (a reader used twice) is ours.
 */
function fromBodyRead(error: BodyReadError, surface: ErrorSurface, exposeInternals: boolean): ApiError {
  if (error.status === 413) return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 65536 bytes.');
  if (error.status === 415) return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The body uses an encoding or charset this endpoint does not accept.');
  if (error.type === 'entity.parse.failed') return unreadableBody(surface, 'The request body is not well-formed JSON.', 'is not well-formed JSON');
  if (error.status === 400) {
    return unreadableBody(surface, 'The request body cannot be read as its Content-Encoding and Content-Length describe it.', 'cannot be read');
  }
  return internal(error, exposeInternals);
}

function internal(error: unknown, exposeInternals: boolean): ApiError {
  const reason = !exposeInternals
    ? ''
    : isValidatorError(error)
      ? ` ${error.message ?? ''} ${JSON.stringify(error.errors)}`
      : error instanceof Error
        ? ` ${error.message}`
        : '';
  return new ApiError('INTERNAL', `Something went wrong on our side; quote the request id to support.${reason}`.slice(0, 1024));
}

/** Turns anything thrown while serving a request into the interface's error; `query` is the request's, as parsed. */
const NO_QUERY: QueryOfRequest = { query: {}, filters: [] };

export function toApiError(error: unknown, surface: ErrorSurface, exposeInternals: boolean, request: QueryOfRequest = NO_QUERY): ApiError {
  if (isApiError(error)) return error;
  if (isValidatorError(error)) return fromValidator(error, surface, exposeInternals, request);
  if (isBodyReadError(error)) return fromBodyRead(error, surface, exposeInternals);
  if (isDatabaseUnavailable(error)) return databaseUnavailable();
  return internal(error, exposeInternals);
}

/** The seconds a client waits before retrying while the database cannot be reached (about a readiness probe's period). */
export const UNAVAILABLE_RETRY_SECONDS = 5;

/** The database cannot be reached (down, restarting, out of connections): the client's retry is right, so 503, not 500. */
export const databaseUnavailable = (): ApiError =>
  new ApiError('SERVICE_UNAVAILABLE', 'The service cannot reach its database right now; retry shortly.', {
    retry_after_seconds: UNAVAILABLE_RETRY_SECONDS,
  });

export function errorBody(error: ApiError, requestId: string): ErrorBody {
  return {
    error: { code: error.code, message: error.message, ...error.extras },
    meta: { request_id: requestId },
  };
}
