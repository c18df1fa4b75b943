import { getProduct } from '../../domain/catalog/products/queries';
import { productNotFound } from '../../domain/catalog/products/row';
import { priceRecordView, productTag } from '../../domain/catalog/products/view';
import { envelope } from '../../http/envelope';
import { etagHeader, type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `products.price.get`: GET /stores/{storeId}/v1/products/{id}/prices: the price record, with the product's ETag. */
const productsPriceGet: Handler<'products.price.get'> = async (context) => {
  const product = await getProduct(context.db, principalOf(context).storeId, recordIdOf(context.params.id, productNotFound));
  return { status: 200, body: envelope(context, priceRecordView(product)), headers: etagHeader(context, productTag(product)) };
};

export default productsPriceGet;
