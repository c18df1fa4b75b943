import { notImplemented } from '../../http/handler';

/** `webhooks.test`: POST /stores/{storeId}/v1/webhook-subscriptions/{id}/test. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('webhooks.test');
