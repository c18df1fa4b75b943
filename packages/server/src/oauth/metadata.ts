import { createHash } from 'node:crypto';
import type { components } from '@svc/contract';
import { parseIfMatch } from '../core/etag';
import { ALL_SCOPES } from '../platform/scopes';

export type AuthorizationServerMetadata = components['schemas']['AuthorizationServerMetadata'];

/** Where the metadata is served (RFC 8414 §3: the well-known suffix after the issuer, which has no path). */
export const METADATA_PATH = '/.well-known/oauth-authorization-server';

/** How long a reader may keep the document: it changes only with a deploy (as `/openapi.json`). */
export const METADATA_MAX_AGE_SECONDS = 300;

/**
 * How a client authenticates at the token, revocation and introspection endpoints: HTTP Basic only
 * (oauth/client-auth refuses credentials in the body, so `client_secret_post` is not offered).
 */
export const CLIENT_AUTH_METHODS = ['client_secret_basic'];

/** The document for an issuer: what the server really accepts, from the code that accepts it and the scope catalogue. */
export function authorizationServerMetadata(issuer: string): AuthorizationServerMetadata {
  const endpoint = (path: string) => `${issuer}${path}`;
  return {
    issuer,
    authorization_endpoint: endpoint('/oauth/authorize'),
    token_endpoint: endpoint('/oauth/token'),
    revocation_endpoint: endpoint('/oauth/revoke'),
    introspection_endpoint: endpoint('/oauth/introspect'),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    scopes_supported: [...ALL_SCOPES],
    authorization_response_iss_parameter_supported: true,
    service_documentation: endpoint('/docs/'),
  };
}

/** The document and its validator; one per issuer, made once. */
export interface MetadataDocument {
  readonly body: AuthorizationServerMetadata;
  /** A strong ETag: a hash of the JSON answered. */
  readonly etag: string;
}

const documents = new Map<string, MetadataDocument>();

export function metadataDocument(issuer: string): MetadataDocument {
  let document = documents.get(issuer);
  if (!document) {
    const body = authorizationServerMetadata(issuer);
    document = { body, etag: `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url')}"` };
    documents.set(issuer, document);
  }
  return document;
}

/** Whether `If-None-Match` names the document's ETag (`*` too; weak comparison, RFC 9110 §13.1.2). */
export function isCurrentCopy(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return (parseIfMatch(ifNoneMatch) ?? []).some(({ tag }) => tag === etag);
}
