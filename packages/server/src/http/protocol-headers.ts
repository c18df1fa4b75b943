import type { ApiError } from '../core/errors';
import type { Quota, RateDecision } from '../services/rate-limit';

/** RFC 6750 §3: error_description is printable ASCII without quotes or backslashes. */
const headerText = (text: string) => text.replace(/[^\x20-\x7e]|["\\]/g, '');

const BEARER_REALM = 'Bearer realm="store-api"';

/** Whether the request presented a bearer token at all (RFC 6750 §3.1: no error code when it did not). */
const presentedBearer = (authorization: string | undefined) => /^Bearer +\S+ *$/i.test(authorization ?? '');

/**
 * The protocol headers an error calls for, from its code and extras alone: `WWW-Authenticate` for
 * 401 and 403 (RFC 6750, RFC 7617), `Retry-After` for 429 and 503, the current `ETag` with 412, and
 * `Allow` with 405 (RFC 9110 §15.5.6).
 */
export function errorHeaders(error: ApiError, request: { authorization?: string | undefined }): Record<string, string> {
  const headers: Record<string, string> = {};
  const { extras } = error;
  switch (error.code) {
    case 'UNAUTHENTICATED':
      headers['WWW-Authenticate'] = presentedBearer(request.authorization)
        ? `${BEARER_REALM}, error="invalid_token", error_description="${headerText(error.message)}"`
        : BEARER_REALM;
      break;
    case 'INSUFFICIENT_SCOPE':
      headers['WWW-Authenticate'] = `${BEARER_REALM}, error="insufficient_scope", scope="${headerText((extras.required_scopes ?? []).join(' '))}"`;
      break;
    case 'INVALID_CLIENT':
      if (error.status === 401) headers['WWW-Authenticate'] = 'Basic realm="oauth", charset="UTF-8"';
      break;
    case 'PRECONDITION_FAILED':
      if (extras.current_etag !== undefined) headers.ETag = extras.current_etag;
      break;
    case 'METHOD_NOT_ALLOWED':
      if (extras.allowed_methods !== undefined) headers.Allow = extras.allowed_methods.join(', ');
      break;
    default:
      break;
  }
  if (extras.retry_after_seconds !== undefined) headers['Retry-After'] = String(extras.retry_after_seconds);
  return headers;
}

/** The IETF RateLimit header fields of a quota decision (`RateLimit`, `RateLimit-Policy`), on every answer. */
export function rateLimitHeaders(quota: Quota, decision: RateDecision): Record<string, string> {
  return {
    RateLimit: `"${quota.policy}";r=${decision.remaining};t=${decision.resetSeconds}`,
    'RateLimit-Policy': `"${quota.policy}";q=${quota.limit};w=${Math.round(quota.windowMs / 1000)}`,
  };
}
