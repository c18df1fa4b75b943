import { notImplemented } from '../../http/handler';

/** `oauth.operations.lookup`: POST /oauth/operations/lookup. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('oauth.operations.lookup');
