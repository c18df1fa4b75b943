import { productNotFound } from '../../domain/catalog/products/row';
import { updateProductSeo } from '../../domain/catalog/products/seo';
import { envelope } from '../../http/envelope';
import { actorOf, type Handler, recordIdOf } from '../../http/handler';

/** `products.seo.update`: PATCH /stores/{storeId}/v1/products/{id}/seo: changes the given SEO fields (no If-Match: see the spec). */
const productsSeoUpdate: Handler<'products.seo.update'> = async (context) => {
  const seo = await updateProductSeo(context.db, actorOf(context), recordIdOf(context.params.id, productNotFound), context.body);
  return { status: 200, body: envelope(context, seo) };
};

export default productsSeoUpdate;
