import { getCategory } from '../../domain/catalog/categories/queries';
import { categoryNotFound } from '../../domain/catalog/categories/row';
import { categoryTag, categoryView } from '../../domain/catalog/categories/view';
import { envelope } from '../../http/envelope';
import { etagHeader, type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `categories.get`: GET /stores/{storeId}/v1/categories/{id}: one category of the store, with its ETag. */
const categoriesGet: Handler<'categories.get'> = async (context) => {
  const category = await getCategory(context.db, principalOf(context).storeId, recordIdOf(context.params.id, categoryNotFound));
  return { status: 200, body: envelope(context, categoryView(category)), headers: etagHeader(context, categoryTag(category)) };
};

export default categoriesGet;
