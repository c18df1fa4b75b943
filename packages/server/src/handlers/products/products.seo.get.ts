import { getProductSeo } from '../../domain/catalog/product-seo';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `products.seo.get`: GET /stores/{storeId}/v1/products/{id}/seo: slug, SEO title and description, keywords, sharing image. */
const productsSeoGet: Handler<'products.seo.get'> = async (context) => {
  const { storeId } = principalOf(context);
  return { status: 200, body: envelope(context, await getProductSeo(context.db, storeId, context.params.id)) };
};

export default productsSeoGet;
