import { createProduct } from '../../domain/catalog/products/changes';
import { productTag, viewOfRow } from '../../domain/catalog/products/view';
import { envelope } from '../../http/envelope';
import { actorOf, etagHeader, type Handler } from '../../http/handler';

/** `products.create`: POST /stores/{storeId}/v1/products. Answers 201 with the product and its ETag. */
const productsCreate: Handler<'products.create'> = async (context) => {
  const product = await createProduct(context.db, actorOf(context), context.body);
  return { status: 201, body: envelope(context, viewOfRow(product)), headers: etagHeader(context, productTag(product)) };
};

export default productsCreate;
