import { notImplemented } from '../../http/handler';

/** `coupons.get`: GET /stores/{storeId}/v1/coupons/{id}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('coupons.get');
