import { recoverDeliveries } from '../../domain/webhooks/recover';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/** `webhooks.recover`: POST …/webhook-subscriptions/{id}/recover. Queues again what the subscription gave up on since `since`; 202 with their count. */
const webhooksRecover: Handler<'webhooks.recover'> = async (context) => {
  const recovery = await recoverDeliveries(context.db, subscriberOf(context), context.params.id, context.body);
  return { status: 202, body: envelope(context, recovery) };
};

export default webhooksRecover;
