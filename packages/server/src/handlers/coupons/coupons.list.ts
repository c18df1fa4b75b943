import { notImplemented } from '../../http/handler';

/** `coupons.list`: GET /stores/{storeId}/v1/coupons. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('coupons.list');
