import { notImplemented } from '../../http/handler';

/** `webhooks.replay`: POST /stores/{storeId}/v1/webhook-subscriptions/{id}/replay. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('webhooks.replay');
