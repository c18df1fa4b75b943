import { firstProductPageRead, listProducts } from '../../domain/catalog/products/queries';
import { pageEnvelope } from '../../http/envelope';
import { listRequestOf, principalOf, readingFirst } from '../../http/handler';

/**
 * `products.list`: GET /stores/{storeId}/v1/products. Keyset pages by id; the filters (AND) travel
 * in the cursor, so a cursor only works with the same filters. The page's statement goes with the
 * token's on PostgreSQL.
 */
const productsList = readingFirst<'products.list'>(
  ({ query, storeId, pager }) => {
    const { limit, cursor, ...filters } = query;
    return firstProductPageRead(storeId, filters, { limit, cursor, pager });
  },
  async (context) => {
    const { limit, cursor, ...filters } = context.query;
    const page = await listProducts(context.db, principalOf(context).storeId, filters, listRequestOf(context, { limit, cursor }), context.readAhead);
    return { status: 200, body: pageEnvelope(context, page) };
  },
);

export default productsList;
