import { notImplemented } from '../../http/handler';

/** `oauth.operations.status`: POST /oauth/operations/status. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('oauth.operations.status');
