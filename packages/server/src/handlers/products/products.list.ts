import { listProducts } from '../../domain/catalog/products/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/**
 * `products.list`: GET /stores/{storeId}/v1/products. Keyset pages by id; the filters (AND) travel
 * in the cursor, so a cursor only works with the same filters.
 */
const productsList: Handler<'products.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const page = await listProducts(context.db, principalOf(context).storeId, filters, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default productsList;
