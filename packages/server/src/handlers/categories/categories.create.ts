import { createCategory } from '../../domain/catalog/categories/changes';
import { categoryTag, categoryView } from '../../domain/catalog/categories/view';
import { envelope } from '../../http/envelope';
import { actorOf, etagHeader, type Handler } from '../../http/handler';

/** `categories.create`: POST /stores/{storeId}/v1/categories. Answers 201 with the category and its ETag. */
const categoriesCreate: Handler<'categories.create'> = async (context) => {
  const category = await createCategory(context.db, actorOf(context), context.body);
  return { status: 201, body: envelope(context, categoryView(category)), headers: etagHeader(context, categoryTag(category)) };
};

export default categoriesCreate;
