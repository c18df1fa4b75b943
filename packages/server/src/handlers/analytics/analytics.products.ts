import { salesByProduct } from '../../domain/storefront/analytics/queries';
import { reportEnvelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `analytics.products`: GET /stores/{storeId}/v1/analytics/sales-by-product. The best sellers of the range, at most 100 (docs/analytics.md). */
const analyticsProducts: Handler<'analytics.products'> = async (context) => {
  const report = await salesByProduct(context.db, principalOf(context).storeId, context.query, context.services.clock);
  return { status: 200, body: reportEnvelope(context, report) };
};

export default analyticsProducts;
