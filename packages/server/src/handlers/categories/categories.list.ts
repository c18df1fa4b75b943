import { listCategories } from '../../domain/catalog/categories';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `categories.list`: GET /stores/{storeId}/v1/categories: one keyset page of the store's categories, optionally by `search`. */
const categoriesList: Handler<'categories.list'> = async (context) => {
  const { storeId } = principalOf(context);
  const { limit, cursor, search } = context.query;
  const { data, page } = await listCategories(context.db, context.keys.cursor, context.services.clock.now(), storeId, {
    limit: limit === undefined ? undefined : Number(limit),
    cursor,
    search,
  });
  return { status: 200, body: pageEnvelope(context, data, page) };
};

export default categoriesList;
