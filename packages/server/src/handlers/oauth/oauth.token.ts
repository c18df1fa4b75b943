import { clientOf, type Handler } from '../../http/handler';
import type { TokenRequestBody } from '../../oauth/operations';
import { requestTokens } from '../../oauth/token-endpoint';

/** RFC 6749 §5.1: token responses are never cached. */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** `oauth.token`: POST /oauth/token, for the client authenticated by HTTP Basic. */
const oauthToken: Handler<'oauth.token'> = async (context) => ({
  status: 200,
  body: await requestTokens(context.services, clientOf(context).id, context.body as TokenRequestBody, context.receivedAt),
  headers: NO_STORE,
});

export default oauthToken;
