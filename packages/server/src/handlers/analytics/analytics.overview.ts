import { notImplemented } from '../../http/handler';

/** `analytics.overview`: GET /stores/{storeId}/v1/analytics/overview. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('analytics.overview');
