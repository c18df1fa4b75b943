import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError } from '../core/errors';
import { errorBody } from './error-mapper';

/** Node's codes for a request it cannot parse: `HPE_*` from llhttp, the header block over `maxHeaderSize` among them. */
const HEADER_OVERFLOW = 'HPE_HEADER_OVERFLOW';

/**
 * The interface's error for a request Node refused before Express saw it, or undefined when the
 * connection has nothing left to answer (the client reset it, or a timeout Node answers itself).
 */
export function clientErrorOf(code: string | undefined): ApiError | undefined {
  if (code === HEADER_OVERFLOW) return new ApiError('HEADERS_TOO_LARGE', 'The request headers are larger than 16384 bytes.');
  if (code?.startsWith('HPE_')) return new ApiError('VALIDATION_FAILED', 'The request is not valid HTTP/1.1.');
  return undefined;
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 431: 'Request Header Fields Too Large' };

/** One complete HTTP/1.1 answer written on the raw socket: no request object exists to answer through. */
export function rawErrorResponse(error: ApiError, requestId: string): string {
  const body = JSON.stringify(errorBody(error, requestId));
  return [
    `HTTP/1.1 ${error.status} ${REASONS[error.status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Cache-Control: no-store',
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * Requests Node's parser refuses (a header block over 16 KiB, malformed HTTP) never reach Express,
 * and Node would answer them with a bare status line. This answers them in the interface's error
 * format instead, with a request id, and closes the connection as Node does.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const answer = clientErrorOf(error.code);
    if (answer === undefined) {
      // Timeouts (Node's 408) and resets: what Node does without a listener, minus its answer for a reset socket.
      if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.writable) socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
      else socket.destroy();
      return;
    }
    if (socket.writable) socket.end(rawErrorResponse(answer, randomUUID()));
    else socket.destroy();
  });
}
