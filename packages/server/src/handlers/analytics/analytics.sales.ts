import { dailySales } from '../../domain/storefront/analytics/queries';
import { reportEnvelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `analytics.sales`: GET /stores/{storeId}/v1/analytics/sales. One point per day of the range, zero-filled (docs/analytics.md). */
const analyticsSales: Handler<'analytics.sales'> = async (context) => {
  const report = await dailySales(context.db, principalOf(context).storeId, context.query, context.services.clock);
  return { status: 200, body: reportEnvelope(context, report) };
};

export default analyticsSales;
