import { productNotFound } from '../../domain/catalog/products/row';
import { getProductSeo } from '../../domain/catalog/products/seo';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `products.seo.get`: GET /stores/{storeId}/v1/products/{id}/seo: slug, SEO title and description, keywords, sharing image. */
const productsSeoGet: Handler<'products.seo.get'> = async (context) => {
  const seo = await getProductSeo(context.db, principalOf(context).storeId, recordIdOf(context.params.id, productNotFound));
  return { status: 200, body: envelope(context, seo) };
};

export default productsSeoGet;
