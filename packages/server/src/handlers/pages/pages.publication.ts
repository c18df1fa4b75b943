import { setPagePublication } from '../../domain/content/pages/changes';
import { pageNotFound } from '../../domain/content/pages/row';
import { pageTag, pageView } from '../../domain/content/pages/view';
import { envelope } from '../../http/envelope';
import { actorOf, etagHeader, type Handler, ifMatchWhenSentOf, recordIdOf } from '../../http/handler';

/** `pages.publication`: PATCH /stores/{storeId}/v1/pages/{id}/publication: publishes or hides the page; If-Match is honoured when sent. */
const pagesPublication: Handler<'pages.publication'> = async (context) => {
  const id = recordIdOf(context.params.id, pageNotFound);
  const page = await setPagePublication(context.db, actorOf(context), id, ifMatchWhenSentOf(context, pageTag), context.body.status);
  return { status: 200, body: envelope(context, pageView(page)), headers: etagHeader(context, pageTag(page)) };
};

export default pagesPublication;
