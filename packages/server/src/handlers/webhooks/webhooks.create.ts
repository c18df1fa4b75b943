import { createSubscription } from '../../domain/webhooks/subscriptions/changes';
import { viewWithSecret } from '../../domain/webhooks/subscriptions/view';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/** `webhooks.create`: POST /stores/{storeId}/v1/webhook-subscriptions. Answers 201 with the signing secret, this once. */
const webhooksCreate: Handler<'webhooks.create'> = async (context) => {
  const { row, secret } = await createSubscription(context.db, context.services, subscriberOf(context), context.body);
  return { status: 201, body: envelope(context, viewWithSecret(row, secret)) };
};

export default webhooksCreate;
