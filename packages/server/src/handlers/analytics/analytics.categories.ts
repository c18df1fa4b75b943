import { salesByCategory } from '../../domain/storefront/analytics/queries';
import { reportEnvelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `analytics.categories`: GET /stores/{storeId}/v1/analytics/sales-by-category. The sales of each category with a counted line (docs/analytics.md). */
const analyticsCategories: Handler<'analytics.categories'> = async (context) => {
  const report = await salesByCategory(context.db, principalOf(context).storeId, context.query, context.services.clock);
  return { status: 200, body: reportEnvelope(context, report) };
};

export default analyticsCategories;
