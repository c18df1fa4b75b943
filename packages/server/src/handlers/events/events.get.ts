import { getEvent } from '../../domain/webhooks/events/feed';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { readerOf } from './reader';

/** `events.get`: GET /stores/{storeId}/v1/events/{id}. One event as events.list shows it; 404 EVENT_EXPIRED past the 30 days. */
const eventsGet: Handler<'events.get'> = async (context) => {
  const event = await getEvent(context.db, readerOf(context), context.params.id);
  return { status: 200, body: envelope(context, event) };
};

export default eventsGet;
