import { notImplemented } from '../../http/handler';

/** `analytics.categories`: GET /stores/{storeId}/v1/analytics/sales-by-category. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('analytics.categories');
