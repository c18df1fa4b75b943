import { rowIdOf } from '../../core/ids';
import { getProduct, productRead } from '../../domain/catalog/products/queries';
import { productNotFound } from '../../domain/catalog/products/row';
import { productTag, viewOfRow } from '../../domain/catalog/products/view';
import { envelope } from '../../http/envelope';
import { etagHeader, principalOf, readingFirst, recordIdOf } from '../../http/handler';

/** `products.get`: GET /stores/{storeId}/v1/products/{id}: one product of the token's store, with its ETag. */
const productsGet = readingFirst<'products.get'>(
  ({ params, storeId }) => {
    const id = rowIdOf(params.id);
    return id === undefined ? undefined : productRead(storeId, id);
  },
  async (context) => {
    const product = await getProduct(context.db, principalOf(context).storeId, recordIdOf(context.params.id, productNotFound), context.readAhead);
    return { status: 200, body: envelope(context, viewOfRow(product)), headers: etagHeader(context, productTag(product)) };
  },
);

export default productsGet;
