import { updatePage } from '../../domain/content/pages/changes';
import { pageNotFound } from '../../domain/content/pages/row';
import { pageTag, pageView } from '../../domain/content/pages/view';
import { envelope } from '../../http/envelope';
import { actorOf, etagHeader, type Handler, ifMatchWhenSentOf, recordIdOf } from '../../http/handler';

/** `pages.update`: PATCH /stores/{storeId}/v1/pages/{id}: If-Match is honoured when sent, never required; answers with the new ETag. */
const pagesUpdate: Handler<'pages.update'> = async (context) => {
  const id = recordIdOf(context.params.id, pageNotFound);
  const page = await updatePage(context.db, actorOf(context), id, ifMatchWhenSentOf(context, pageTag), context.body);
  return { status: 200, body: envelope(context, pageView(page)), headers: etagHeader(context, pageTag(page)) };
};

export default pagesUpdate;
