import { notImplemented } from '../../http/handler';

/** `oauth.operations.recover`: POST /oauth/operations/recover. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('oauth.operations.recover');
