import { replaceProductMedia } from '../../domain/catalog/products/media';
import { productNotFound } from '../../domain/catalog/products/row';
import { envelope } from '../../http/envelope';
import { actorOf, type Handler, recordIdOf } from '../../http/handler';

/** `products.media.update`: PATCH /stores/{storeId}/v1/products/{id}/media: replaces the image list (no If-Match: see the spec). */
const productsMediaUpdate: Handler<'products.media.update'> = async (context) => {
  const media = await replaceProductMedia(context.db, actorOf(context), recordIdOf(context.params.id, productNotFound), context.body.images);
  return { status: 200, body: envelope(context, media) };
};

export default productsMediaUpdate;
