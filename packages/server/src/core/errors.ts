import type { components } from '@svc/contract';

export type ErrorCode = components['schemas']['ErrorCode'];
export type ErrorBody = components['schemas']['ErrorBody'];
export type ErrorDetail = components['schemas']['ErrorDetail'];

/** The HTTP status of every error code: the one place codes meet statuses. */
export const statusOfCode = {
  UNAUTHENTICATED: 401,
  INSUFFICIENT_SCOPE: 403,
  STORE_NOT_FOUND: 404,
  NOT_FOUND: 404,
  EVENT_EXPIRED: 404,
  METHOD_NOT_ALLOWED: 405,
  VALIDATION_FAILED: 400,
  INVALID_FILTER: 400,
  INVALID_CURSOR: 400,
  CURSOR_EXPIRED: 400,
  IDEMPOTENCY_KEY_REQUIRED: 400,
  PRICE_REQUIRED: 409,
  INSUFFICIENT_STOCK: 409,
  CATEGORY_NAME_TAKEN: 409,
  CATEGORY_PARENT_INVALID: 422,
  SLUG_TAKEN: 409,
  SUBSCRIPTION_REVOKED: 409,
  IDEMPOTENCY_KEY_IN_PROGRESS: 409,
  ORDER_STATE_CONFLICT: 409,
  CART_ALREADY_RECOVERED: 409,
  COUPON_EXPIRED: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNKNOWN_FIELD: 422,
  CATEGORY_NOT_FOUND: 422,
  IDEMPOTENCY_KEY_REUSED: 422,
  EVENT_TYPE_NOT_ALLOWED: 422,
  PRODUCT_UNAVAILABLE: 422,
  CUSTOMER_NOT_FOUND: 422,
  COUPON_NOT_APPLICABLE: 422,
  REVIEW_NOT_ALLOWED: 422,
  PRECONDITION_REQUIRED: 428,
  RATE_LIMITED: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  NOT_IMPLEMENTED: 501,
  STORE_MIGRATING: 503,
  SERVICE_UNAVAILABLE: 503,
  INVALID_REQUEST: 400,
  UNSUPPORTED_RESPONSE_TYPE: 400,
  INVALID_SCOPE: 400,
  SCOPE_DEPENDENCIES_MUST_BE_VISIBLE: 400,
  INVALID_CLIENT: 401,
  INVALID_GRANT_TYPE: 400,
  INVALID_GRANT: 400,
  INVALID_CODE: 400,
  REDIRECT_URI_MISMATCH: 400,
  PKCE_MISMATCH: 400,
  INVALID_REFRESH_TOKEN: 400,
  REFRESH_ALREADY_USED: 400,
  TOKEN_REUSE_DETECTED: 400,
  RECONSENT_REQUIRED: 403,
  OPERATION_NOT_FOUND: 404,
  RESULT_UNAVAILABLE_REAUTHORIZE: 409,
  INVALID_LAUNCH: 400,
  UNSUPPORTED_VERSION: 400,
} as const satisfies Record<ErrorCode, number>;

/** Fields of the error object beyond code and message, as the spec defines them. */
export type ErrorExtras = Omit<ErrorBody['error'], 'code' | 'message'>;

export interface ApiErrorOptions extends ErrorExtras {
  /** Overrides the code's usual status where the interface differs (INVALID_CLIENT at authorize). */
  status?: number;
}

/**
 * A failure that the interface names: thrown anywhere, turned into a response in one place (the
 * HTTP edge, which also adds the protocol headers a code calls for, such as `Retry-After` or
 * `WWW-Authenticate`, from the code and the extras). It carries only what the error body says.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly extras: ErrorExtras;

  constructor(
    readonly code: ErrorCode,
    message: string,
    { status, ...extras }: ApiErrorOptions = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status ?? statusOfCode[code];
    this.extras = extras;
  }
}

/**
 * 400 VALIDATION_FAILED about one field of the request body (`field` a JSON Pointer such as
 * `/items/0/quantity`): the rules of the domain that a schema cannot say. The one way such an error
 * is built, so every one has the shape the spec validator's errors have.
 */
export const invalidBodyField = (field: string, detail: string, message = 'The request is not valid.'): ApiError =>
  new ApiError('VALIDATION_FAILED', message, { details: [{ location: 'body', field, message: detail }] });

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}
