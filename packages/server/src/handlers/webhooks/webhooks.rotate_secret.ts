import { notImplemented } from '../../http/handler';

/** `webhooks.rotate_secret`: POST /stores/{storeId}/v1/webhook-subscriptions/{id}/rotate-secret. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('webhooks.rotate_secret');
