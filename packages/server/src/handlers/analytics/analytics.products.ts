import { notImplemented } from '../../http/handler';

/** `analytics.products`: GET /stores/{storeId}/v1/analytics/sales-by-product. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('analytics.products');
