import type { IncomingHttpHeaders } from 'node:http';
import type { OperationEntry } from '@svc/contract';
import { ApiError } from '../core/errors';

/** Whether a request carries content (RFC 9110 §6.4.1): a Content-Length above zero, or any Transfer-Encoding. */
const carriesContent = (headers: IncomingHttpHeaders): boolean => headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;

/**
 * 415 when content is sent to an operation that takes no body (a GET, a DELETE, a POST without
 * one): nothing would read it, so a client that meant something by it learns at once that it was
 * not taken, instead of getting an answer to a request it did not make.
 */
export function refuseUnexpectedContent(entry: OperationEntry, headers: IncomingHttpHeaders): void {
  if (entry.requestMediaTypes.length > 0 || !carriesContent(headers)) return;
  throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `${entry.method.toUpperCase()} ${entry.path} takes no request body; send the request without one.`);
}
