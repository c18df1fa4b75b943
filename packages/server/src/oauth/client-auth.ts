import { ApiError } from '../core/errors';
import { UUID_PATTERN } from '../core/ids';
import { checkSecret } from '../credentials/secrets';
import { type App, authenticateClient } from '../platform/apps';
import type { Deps } from '../services/container';

const invalidClient = (message: string) => new ApiError('INVALID_CLIENT', message);

export type BasicCredentials = { clientId: string; secret: string };

/**
 * Reads `Authorization: Basic` (RFC 7617; RFC 6749 §2.3.1 form-encodes id and secret first).
 * Missing is 401 INVALID_CLIENT; present but not well-formed Basic is 400 INVALID_REQUEST.
 */
export function parseBasic(header: string | undefined): BasicCredentials {
  if (header === undefined || header.trim() === '') throw invalidClient('Client authentication is required: HTTP Basic with client_id:client_secret.');
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!match) {
    if (/^Basic\b/i.test(header) || !/^\S+ /.test(header)) throw new ApiError('INVALID_REQUEST', 'The Authorization header is not well-formed HTTP Basic.');
    throw invalidClient('Only HTTP Basic client authentication is accepted.');
  }
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new ApiError('INVALID_REQUEST', 'The Basic credentials are not client_id:client_secret.');
  try {
    return {
      clientId: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  } catch {
    throw new ApiError('INVALID_REQUEST', 'The Basic credentials are not well-formed.');
  }
}

/** The authenticated client's app, or 401 INVALID_CLIENT with `WWW-Authenticate: Basic`. */
export async function authenticateBasic(deps: Deps, header: string | undefined): Promise<App> {
  const { clientId, secret } = parseBasic(header);
  const presented = checkSecret('clientSecret', secret);
  if (!UUID_PATTERN.test(clientId) || !presented.ok) throw invalidClient('Client authentication failed.');
  const app = await authenticateClient(deps, clientId.toLowerCase(), presented.hash);
  if (!app) throw invalidClient('Client authentication failed.');
  return app;
}
