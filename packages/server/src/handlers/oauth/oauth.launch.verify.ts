import { notImplemented } from '../../http/handler';

/** `oauth.launch.verify`: POST /oauth/launch/verify. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('oauth.launch.verify');
