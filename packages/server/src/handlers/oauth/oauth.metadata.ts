import type { Handler } from '../../http/handler';
import { isCurrentCopy, METADATA_MAX_AGE_SECONDS, metadataDocument } from '../../oauth/metadata';

/**
 * `oauth.metadata`: GET /.well-known/oauth-authorization-server (RFC 8414), the bare document for
 * the configured issuer; cacheable, `304` for a current copy, readable from any origin.
 */
const oauthMetadata: Handler<'oauth.metadata'> = async (context) => {
  const { body, etag } = metadataDocument(context.services.issuer);
  const headers = { ETag: etag, 'Cache-Control': `public, max-age=${METADATA_MAX_AGE_SECONDS}`, 'Access-Control-Allow-Origin': '*' };
  if (isCurrentCopy(context.headers['if-none-match'], etag)) return { status: 304, body: undefined, headers };
  return { status: 200, body, headers };
};

export default oauthMetadata;
