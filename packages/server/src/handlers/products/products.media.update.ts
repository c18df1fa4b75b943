import { replaceProductMedia } from '../../domain/catalog/product-media';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `products.media.update`: PATCH /stores/{storeId}/v1/products/{id}/media: replaces the image list (no If-Match: see the spec). */
const productsMediaUpdate: Handler<'products.media.update'> = async (context) => {
  const { storeId, installationId } = principalOf(context);
  const change = { storeId, installationId, pathId: context.params.id, now: context.services.clock.now() };
  return { status: 200, body: envelope(context, await replaceProductMedia(context.db, change, context.body.images)) };
};

export default productsMediaUpdate;
