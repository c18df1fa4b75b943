import { createPage } from '../../domain/content/pages/changes';
import { pageTag, pageView } from '../../domain/content/pages/view';
import { envelope } from '../../http/envelope';
import { actorOf, etagHeader, type Handler } from '../../http/handler';

/** `pages.create`: POST /stores/{storeId}/v1/pages. Answers 201 with the draft page and its ETag. */
const pagesCreate: Handler<'pages.create'> = async (context) => {
  const page = await createPage(context.db, actorOf(context), context.body);
  return { status: 201, body: envelope(context, pageView(page)), headers: etagHeader(context, pageTag(page)) };
};

export default pagesCreate;
