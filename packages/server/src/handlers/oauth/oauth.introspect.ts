import { clientOf, type Handler } from '../../http/handler';
import { introspectToken } from '../../oauth/introspection';
import type { PresentedTokenBody } from '../../oauth/presented-tokens';
import { NO_STORE } from './oauth.token';

/** `oauth.introspect`: POST /oauth/introspect (RFC 7662) for the client authenticated by HTTP Basic: its own tokens only. */
const oauthIntrospect: Handler<'oauth.introspect'> = async (context) => ({
  status: 200,
  body: await introspectToken(context.services, clientOf(context).id, context.body as PresentedTokenBody),
  headers: NO_STORE,
});

export default oauthIntrospect;
