import { createProduct, productTag } from '../../domain/catalog/products';
import { envelope } from '../../http/envelope';
import { etagOf } from '../../core/etag';
import { type Handler, principalOf } from '../../http/handler';

/**
 * `products.create`: POST /stores/{storeId}/v1/products. Runs in the Idempotency-Key's transaction
 * (`context.db`); answers 201 with the product and its ETag.
 */
const productsCreate: Handler<'products.create'> = async (context) => {
  const { storeId, installationId } = principalOf(context);
  const { row, view } = await createProduct(context.db, { storeId, installationId, now: context.services.clock.now() }, context.body);
  return { status: 201, body: envelope(context, view), headers: { ETag: etagOf(context.keys.etag, productTag(row)) } };
};

export default productsCreate;
