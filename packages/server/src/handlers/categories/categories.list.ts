import { listCategories } from '../../domain/catalog/categories/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/** `categories.list`: GET /stores/{storeId}/v1/categories: one keyset page of the store's categories, optionally by `search`. */
const categoriesList: Handler<'categories.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const page = await listCategories(context.db, principalOf(context).storeId, filters, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default categoriesList;
