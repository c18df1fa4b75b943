import { notImplemented } from '../../http/handler';

/** `payments.get`: GET /stores/{storeId}/v1/payments/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('payments.get');
