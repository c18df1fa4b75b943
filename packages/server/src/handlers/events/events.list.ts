import { listEvents } from '../../domain/webhooks/events/feed';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf } from '../../http/handler';
import { readerOf } from './reader';

/**
 * `events.list`: GET /stores/{storeId}/v1/events. The store's events of the last 30 days the token
 * may see, newest first, each as its webhook deliveries carry it; the filters travel in the cursor.
 */
const eventsList: Handler<'events.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const page = await listEvents(context.db, readerOf(context), filters, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default eventsList;
