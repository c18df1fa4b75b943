import { listPages } from '../../domain/content/pages/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/** `pages.list`: GET /stores/{storeId}/v1/pages: one keyset page of the store's pages, optionally by `search` and `status`. */
const pagesList: Handler<'pages.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const page = await listPages(context.db, principalOf(context).storeId, filters, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default pagesList;
