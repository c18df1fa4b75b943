import { loadProduct, notFound, productTag } from '../../domain/catalog/products';
import { envelope } from '../../http/envelope';
import { etagOf } from '../../core/etag';
import { type Handler, principalOf } from '../../http/handler';

/** `products.get`: GET /stores/{storeId}/v1/products/{id}: one product of the token's store, with its ETag. */
const productsGet: Handler<'products.get'> = async (context) => {
  const found = await loadProduct(context.db, principalOf(context).storeId, context.params.id);
  if (!found) throw notFound();
  return { status: 200, body: envelope(context, found.view), headers: { ETag: etagOf(context.keys.etag, productTag(found.row)) } };
};

export default productsGet;
