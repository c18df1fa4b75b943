import { listDeliveries } from '../../domain/webhooks/log/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf } from '../../http/handler';
import { subscriberOf } from './subscriber';

/** `webhooks.deliveries.list`: GET …/webhook-subscriptions/{id}/deliveries. The subscription's delivery log, newest event first. */
const webhooksDeliveriesList: Handler<'webhooks.deliveries.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const page = await listDeliveries(context.db, subscriberOf(context), context.params.id, filters, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default webhooksDeliveriesList;
