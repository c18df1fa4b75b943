import { productTag, updateProductContent } from '../../domain/catalog/products';
import { envelope } from '../../http/envelope';
import { etagOf, requireCurrent } from '../../core/etag';
import { type Handler, principalOf } from '../../http/handler';

/**
 * `products.content`: PATCH /stores/{storeId}/v1/products/{id}/content. Applies only if `If-Match`
 * is the product's current ETag (412 otherwise, also when another update wins the race).
 */
const productsContent: Handler<'products.content'> = async (context) => {
  const { storeId, installationId } = principalOf(context);
  const actor = { storeId, installationId, now: context.services.clock.now() };
  const precondition = (current: Parameters<typeof productTag>[0]) => requireCurrent(context.keys.etag, context.headers['if-match'], productTag(current));
  const { row, view } = await updateProductContent(context.db, actor, context.params.id, precondition, context.body);
  return { status: 200, body: envelope(context, view), headers: { ETag: etagOf(context.keys.etag, productTag(row)) } };
};

export default productsContent;
