import { updateProductPrices } from '../../domain/catalog/products/changes';
import { productNotFound } from '../../domain/catalog/products/row';
import { priceRecordView, productTag } from '../../domain/catalog/products/view';
import { envelope } from '../../http/envelope';
import { actorOf, etagHeader, type Handler, ifMatchOf, recordIdOf } from '../../http/handler';

/**
 * `products.prices`: PATCH /stores/{storeId}/v1/products/{id}/prices. Prices share the product's
 * ETag; applies only if `If-Match` is current. Answers the new price record and ETag.
 */
const productsPrices: Handler<'products.prices'> = async (context) => {
  const id = recordIdOf(context.params.id, productNotFound);
  const product = await updateProductPrices(context.db, actorOf(context), id, ifMatchOf(context, productTag), context.body);
  return { status: 200, body: envelope(context, priceRecordView(product)), headers: etagHeader(context, productTag(product)) };
};

export default productsPrices;
