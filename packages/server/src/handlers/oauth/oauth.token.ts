import { notImplemented } from '../../http/handler';

/** `oauth.token`: POST /oauth/token. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('oauth.token');
