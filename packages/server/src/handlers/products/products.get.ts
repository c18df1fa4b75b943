import { getProduct } from '../../domain/catalog/products/queries';
import { productNotFound } from '../../domain/catalog/products/row';
import { productTag, viewOfRow } from '../../domain/catalog/products/view';
import { envelope } from '../../http/envelope';
import { etagHeader, type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `products.get`: GET /stores/{storeId}/v1/products/{id}: one product of the token's store, with its ETag. */
const productsGet: Handler<'products.get'> = async (context) => {
  const product = await getProduct(context.db, principalOf(context).storeId, recordIdOf(context.params.id, productNotFound));
  return { status: 200, body: envelope(context, viewOfRow(product)), headers: etagHeader(context, productTag(product)) };
};

export default productsGet;
