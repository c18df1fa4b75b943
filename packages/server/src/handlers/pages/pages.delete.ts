import { deletePage } from '../../domain/content/pages/changes';
import { pageNotFound } from '../../domain/content/pages/row';
import { pageTag } from '../../domain/content/pages/view';
import { envelope } from '../../http/envelope';
import { actorOf, type Handler, ifMatchWhenSentOf, recordIdOf } from '../../http/handler';

/** `pages.delete`: DELETE /stores/{storeId}/v1/pages/{id}: deletes the page for good; If-Match is honoured when sent. */
const pagesDelete: Handler<'pages.delete'> = async (context) => {
  const id = recordIdOf(context.params.id, pageNotFound);
  const page = await deletePage(context.db, actorOf(context), id, ifMatchWhenSentOf(context, pageTag));
  return { status: 200, body: envelope(context, { id: page.id, deleted: true }) };
};

export default pagesDelete;
