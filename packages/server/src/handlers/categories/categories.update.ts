import { updateCategory } from '../../domain/catalog/categories/changes';
import { categoryNotFound } from '../../domain/catalog/categories/row';
import { categoryTag, categoryView } from '../../domain/catalog/categories/view';
import { envelope } from '../../http/envelope';
import { actorOf, etagHeader, type Handler, ifMatchOf, recordIdOf } from '../../http/handler';

/** `categories.update`: PATCH /stores/{storeId}/v1/categories/{id}: needs the current ETag in If-Match; answers with the new one. */
const categoriesUpdate: Handler<'categories.update'> = async (context) => {
  const id = recordIdOf(context.params.id, categoryNotFound);
  const category = await updateCategory(context.db, actorOf(context), id, ifMatchOf(context, categoryTag), context.body);
  return { status: 200, body: envelope(context, categoryView(category)), headers: etagHeader(context, categoryTag(category)) };
};

export default categoriesUpdate;
