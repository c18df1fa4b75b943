import type { components } from '@svc/contract';
import type { ErrorCode, ErrorDetail } from './generated/schema';

/** The service's error object: `code`, `message` and the extras some codes carry (`details`, `current_etag`, `operation_id`, …). */
export type ErrorObject = components['schemas']['ErrorBody']['error'];

/**
 * The client's own codes, for failures that never got an answer in the error format: the request
 * did not complete (`NETWORK_ERROR`), or ran out of its time (`TIMEOUT`, the client's `timeoutMs`), or the answer was not the service's error format
 * (`UNEXPECTED_RESPONSE`, a proxy's HTML page for instance), or a token manager has no pair stored
 * (`NO_TOKENS`: authorize first).
 */
export type ClientErrorCode = 'NETWORK_ERROR' | 'TIMEOUT' | 'UNEXPECTED_RESPONSE' | 'NO_TOKENS';

/** Every failure the client reports: an error answer of the service, or one of the client's own codes. */
export class StoreApiError extends Error {
  override readonly name: string = 'StoreApiError';
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number;
  readonly code: ErrorCode | ClientErrorCode;
  /** `meta.request_id` (also `X-Request-Id`): quote it to support. Undefined when no answer arrived. */
  readonly requestId: string | undefined;
  /** One entry per problem found (validation failures); empty otherwise. */
  readonly details: readonly ErrorDetail[];
  /** The whole error object, with the extras its code carries; undefined for the client's own codes. */
  readonly error: ErrorObject | undefined;

  constructor(init: {
    status: number;
    code: ErrorCode | ClientErrorCode;
    message: string;
    requestId?: string | undefined;
    error?: ErrorObject | undefined;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.error = init.error;
    this.details = init.error?.details ?? [];
  }

  /** The error format's body as an error; anything else answered with a failing status is `UNEXPECTED_RESPONSE`. */
  static fromBody(status: number, body: unknown, requestIdHeader: string | null): StoreApiError {
    if (isErrorBody(body)) {
      return new StoreApiError({ status, code: body.error.code, message: body.error.message, requestId: body.meta.request_id, error: body.error });
    }
    return new StoreApiError({
      status,
      code: 'UNEXPECTED_RESPONSE',
      message: `The service answered ${status} without its error format.`,
      requestId: requestIdHeader ?? undefined,
    });
  }

  static network(cause: unknown): StoreApiError {
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new StoreApiError({ status: 0, code: 'NETWORK_ERROR', message: `The request did not complete: ${reason}`, cause });
  }

  /** An attempt aborted by the client's timeout: like a lost connection, the service may or may not have done the work. */
  static timeout(ms: number): StoreApiError {
    return new StoreApiError({ status: 0, code: 'TIMEOUT', message: `The request did not complete within ${ms} ms.` });
  }

  /** No answer arrived (`NETWORK_ERROR` or `TIMEOUT`): the request may or may not have been carried out. */
  get lostResponse(): boolean {
    return this.code === 'NETWORK_ERROR' || this.code === 'TIMEOUT';
  }
}

/**
 * The app must send the store owner through authorization again: the grant is gone or its tokens
 * can no longer be obtained. `code` says why (`TOKEN_REUSE_DETECTED`, `REFRESH_ALREADY_USED`,
 * `RESULT_UNAVAILABLE_REAUTHORIZE`, `RECONSENT_REQUIRED`, `INVALID_REFRESH_TOKEN`).
 */
export class ReauthorizationRequiredError extends StoreApiError {
  override readonly name: string = 'ReauthorizationRequiredError';
  /** The token operation whose lost pair was recovered (revoked) on the way, if one was. */
  readonly recoveredOperationId: string | undefined;

  constructor(from: StoreApiError, options: { message?: string; recoveredOperationId?: string } = {}) {
    super({ status: from.status, code: from.code, message: options.message ?? from.message, requestId: from.requestId, error: from.error, cause: from });
    this.recoveredOperationId = options.recoveredOperationId;
  }
}

function isErrorBody(body: unknown): body is { error: ErrorObject; meta: { request_id: string } } {
  if (typeof body !== 'object' || body === null) return false;
  const { error, meta } = body as { error?: { code?: unknown; message?: unknown }; meta?: { request_id?: unknown } };
  return typeof error?.code === 'string' && typeof error.message === 'string' && typeof meta?.request_id === 'string';
}

/** Reads a failing answer into a `StoreApiError` (the body is consumed). */
export async function errorFromResponse(response: Response): Promise<StoreApiError> {
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return StoreApiError.fromBody(response.status, body, response.headers.get('x-request-id'));
}
