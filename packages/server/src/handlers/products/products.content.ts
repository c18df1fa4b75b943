import { updateProductContent } from '../../domain/catalog/products/changes';
import { productNotFound } from '../../domain/catalog/products/row';
import { productTag, viewOfRow } from '../../domain/catalog/products/view';
import { envelope } from '../../http/envelope';
import { actorOf, etagHeader, type Handler, ifMatchOf, recordIdOf } from '../../http/handler';

/** `products.content`: PATCH /stores/{storeId}/v1/products/{id}/content, when `If-Match` is the product's current ETag. */
const productsContent: Handler<'products.content'> = async (context) => {
  const id = recordIdOf(context.params.id, productNotFound);
  const product = await updateProductContent(context.db, actorOf(context), id, ifMatchOf(context, productTag), context.body);
  return { status: 200, body: envelope(context, viewOfRow(product)), headers: etagHeader(context, productTag(product)) };
};

export default productsContent;
