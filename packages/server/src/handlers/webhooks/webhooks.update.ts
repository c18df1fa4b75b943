import { updateSubscription } from '../../domain/webhooks/subscriptions/changes';
import { viewOfSubscription } from '../../domain/webhooks/subscriptions/view';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/** `webhooks.update`: PATCH /stores/{storeId}/v1/webhook-subscriptions/{id}. Endpoint, event types, pause and resume. */
const webhooksUpdate: Handler<'webhooks.update'> = async (context) => {
  const row = await updateSubscription(context.db, context.services, subscriberOf(context), context.params.id, context.body);
  return { status: 200, body: envelope(context, viewOfSubscription(row)) };
};

export default webhooksUpdate;
