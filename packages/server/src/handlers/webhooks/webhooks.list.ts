import { notImplemented } from '../../http/handler';

/** `webhooks.list`: GET /stores/{storeId}/v1/webhook-subscriptions. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('webhooks.list');
