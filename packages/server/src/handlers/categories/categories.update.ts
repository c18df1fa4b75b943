import { categoryEtag, updateCategory } from '../../domain/catalog/categories';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';

/** `categories.update`: PATCH /stores/{storeId}/v1/categories/{id}: needs the current ETag in If-Match; answers with the new one. */
const categoriesUpdate: Handler<'categories.update'> = async (context) => {
  const { storeId } = principalOf(context);
  const { row, category } = await updateCategory(
    context.db,
    { storeId, now: context.services.clock.now(), etagKey: context.keys.etag, ifMatch: context.headers['if-match'] },
    context.params.id,
    context.body,
  );
  return { status: 200, body: envelope(context, category), headers: { ETag: categoryEtag(context.keys.etag, row) } };
};

export default categoriesUpdate;
