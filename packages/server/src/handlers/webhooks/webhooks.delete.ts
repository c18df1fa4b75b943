import { notImplemented } from '../../http/handler';

/** `webhooks.delete`: DELETE /stores/{storeId}/v1/webhook-subscriptions/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('webhooks.delete');
