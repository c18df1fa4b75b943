import { salesOverview } from '../../domain/storefront/analytics/queries';
import { reportEnvelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `analytics.overview`: GET /stores/{storeId}/v1/analytics/overview. The range's totals, from the daily rollups (docs/analytics.md). */
const analyticsOverview: Handler<'analytics.overview'> = async (context) => {
  const report = await salesOverview(context.db, principalOf(context).storeId, context.query, context.services.clock);
  return { status: 200, body: reportEnvelope(context, report) };
};

export default analyticsOverview;
