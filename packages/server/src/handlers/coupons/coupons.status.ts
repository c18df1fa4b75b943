import { notImplemented } from '../../http/handler';

/** `coupons.status`: PATCH /stores/{storeId}/v1/coupons/{id}/status. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('coupons.status');
