import { findProductRow, notFound, priceRecordView, productTag } from '../../domain/catalog/products';
import { envelope } from '../../http/envelope';
import { etagOf } from '../../core/etag';
import { type Handler, principalOf } from '../../http/handler';

/** `products.price.get`: GET /stores/{storeId}/v1/products/{id}/prices: the price record, with the product's ETag. */
const productsPriceGet: Handler<'products.price.get'> = async (context) => {
  const row = await findProductRow(context.db, principalOf(context).storeId, context.params.id);
  if (!row) throw notFound();
  return { status: 200, body: envelope(context, priceRecordView(row)), headers: { ETag: etagOf(context.keys.etag, productTag(row)) } };
};

export default productsPriceGet;
