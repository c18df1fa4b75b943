import { notImplemented } from '../../http/handler';

/** `analytics.sales`: GET /stores/{storeId}/v1/analytics/sales. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('analytics.sales');
