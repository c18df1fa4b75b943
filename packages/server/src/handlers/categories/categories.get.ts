import { categoryEtag, getCategory } from '../../domain/catalog/categories';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `categories.get`: GET /stores/{storeId}/v1/categories/{id}: one category of the store, with its ETag. */
const categoriesGet: Handler<'categories.get'> = async (context) => {
  const { storeId } = principalOf(context);
  const { row, category } = await getCategory(context.db, storeId, context.params.id);
  return { status: 200, body: envelope(context, category), headers: { ETag: categoryEtag(context.keys.etag, row) } };
};

export default categoriesGet;
