import { notImplemented } from '../../http/handler';

/** `oauth.authorize`: GET /oauth/authorize. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('oauth.authorize');
