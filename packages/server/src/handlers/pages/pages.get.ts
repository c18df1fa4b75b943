import { getPage } from '../../domain/content/pages/queries';
import { pageNotFound } from '../../domain/content/pages/row';
import { pageTag, pageView } from '../../domain/content/pages/view';
import { envelope } from '../../http/envelope';
import { etagHeader, type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `pages.get`: GET /stores/{storeId}/v1/pages/{id}: one page of the store, in any status, with its ETag. */
const pagesGet: Handler<'pages.get'> = async (context) => {
  const page = await getPage(context.db, principalOf(context).storeId, recordIdOf(context.params.id, pageNotFound));
  return { status: 200, body: envelope(context, pageView(page)), headers: etagHeader(context, pageTag(page)) };
};

export default pagesGet;
