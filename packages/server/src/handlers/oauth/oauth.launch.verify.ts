import { clientOf, type Handler } from '../../http/handler';
import { verifyLaunch } from '../../oauth/launch';
import { NO_STORE } from './oauth.token';

/** `oauth.launch.verify`: POST /oauth/launch/verify with `{launch_url}`. */
const oauthLaunchVerify: Handler<'oauth.launch.verify'> = async (context) => ({
  status: 200,
  body: await verifyLaunch(context.services, clientOf(context).id, context.body.launch_url),
  headers: NO_STORE,
});

export default oauthLaunchVerify;
