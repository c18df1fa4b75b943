import { getProductMedia } from '../../domain/catalog/products/media';
import { productNotFound } from '../../domain/catalog/products/row';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `products.media.get`: GET /stores/{storeId}/v1/products/{id}/media: the images in display order, the default first (no ETag: see the spec). */
const productsMediaGet: Handler<'products.media.get'> = async (context) => {
  const media = await getProductMedia(context.db, principalOf(context).storeId, recordIdOf(context.params.id, productNotFound));
  return { status: 200, body: envelope(context, media) };
};

export default productsMediaGet;
