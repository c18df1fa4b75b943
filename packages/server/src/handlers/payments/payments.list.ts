import { notImplemented } from '../../http/handler';

/** `payments.list`: GET /stores/{storeId}/v1/payments. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('payments.list');
