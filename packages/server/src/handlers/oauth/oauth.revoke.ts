import { clientOf, type Handler } from '../../http/handler';
import type { PresentedTokenBody } from '../../oauth/presented-tokens';
import { revokeToken } from '../../oauth/revocation';
import { NO_STORE } from './oauth.token';

/** `oauth.revoke`: POST /oauth/revoke (RFC 7009) for the client authenticated by HTTP Basic; `200` without a body. */
const oauthRevoke: Handler<'oauth.revoke'> = async (context) => {
  await revokeToken(context.services, clientOf(context).id, context.body as PresentedTokenBody);
  return { status: 200, body: undefined, headers: NO_STORE };
};

export default oauthRevoke;
