import { getDelivery } from '../../domain/webhooks/log/queries';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/** `webhooks.deliveries.get`: GET …/webhook-subscriptions/{id}/deliveries/{eventId}. The event's deliveries to the subscription and their attempts. */
const webhooksDeliveriesGet: Handler<'webhooks.deliveries.get'> = async (context) => {
  const entry = await getDelivery(context.db, subscriberOf(context), context.params.id, context.params.eventId);
  return { status: 200, body: envelope(context, entry) };
};

export default webhooksDeliveriesGet;
