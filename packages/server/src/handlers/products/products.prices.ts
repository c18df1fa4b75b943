import { priceRecordView, productTag, updateProductPrices } from '../../domain/catalog/products';
import { envelope } from '../../http/envelope';
import { etagOf, requireCurrent } from '../../core/etag';
import { type Handler, principalOf } from '../../http/handler';

/**
 * `products.prices`: PATCH /stores/{storeId}/v1/products/{id}/prices. Prices share the product's
 * ETag; applies only if `If-Match` is current. Answers the new price record and ETag.
 */
const productsPrices: Handler<'products.prices'> = async (context) => {
  const { storeId, installationId } = principalOf(context);
  const actor = { storeId, installationId, now: context.services.clock.now() };
  const precondition = (current: Parameters<typeof productTag>[0]) => requireCurrent(context.keys.etag, context.headers['if-match'], productTag(current));
  const { row } = await updateProductPrices(context.db, actor, context.params.id, precondition, context.body);
  return { status: 200, body: envelope(context, priceRecordView(row)), headers: { ETag: etagOf(context.keys.etag, productTag(row)) } };
};

export default productsPrices;
