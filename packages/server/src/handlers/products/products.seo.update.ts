import { updateProductSeo } from '../../domain/catalog/product-seo';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `products.seo.update`: PATCH /stores/{storeId}/v1/products/{id}/seo: changes the given SEO fields (no If-Match: see the spec). */
const productsSeoUpdate: Handler<'products.seo.update'> = async (context) => {
  const { storeId, installationId } = principalOf(context);
  const change = { storeId, installationId, pathId: context.params.id, now: context.services.clock.now() };
  return { status: 200, body: envelope(context, await updateProductSeo(context.db, change, context.body)) };
};

export default productsSeoUpdate;
