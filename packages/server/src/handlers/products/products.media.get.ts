import { getProductMedia } from '../../domain/catalog/product-media';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `products.media.get`: GET /stores/{storeId}/v1/products/{id}/media: the images in display order, the default first (no ETag: see the spec). */
const productsMediaGet: Handler<'products.media.get'> = async (context) => {
  const { storeId } = principalOf(context);
  return { status: 200, body: envelope(context, await getProductMedia(context.db, storeId, context.params.id)) };
};

export default productsMediaGet;
