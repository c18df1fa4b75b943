import { categoryEtag, categoryView, createCategory } from '../../domain/catalog/categories';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/**
 * `categories.create`: POST /stores/{storeId}/v1/categories. Runs inside the Idempotency-Key's
 * transaction (`context.db`), so the category and the stored response commit together.
 */
const categoriesCreate: Handler<'categories.create'> = async (context) => {
  const { storeId } = principalOf(context);
  const row = await createCategory(context.db, { storeId, now: context.services.clock.now() }, context.body);
  return { status: 201, body: envelope(context, categoryView(row, 0)), headers: { ETag: categoryEtag(context.keys.etag, row) } };
};

export default categoriesCreate;
