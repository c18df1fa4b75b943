import { revokeSubscription } from '../../domain/webhooks/subscriptions/changes';
import { viewOfSubscription } from '../../domain/webhooks/subscriptions/view';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/** `webhooks.delete`: DELETE /stores/{storeId}/v1/webhook-subscriptions/{id}. Revokes it; nothing more is sent to it. */
const webhooksDelete: Handler<'webhooks.delete'> = async (context) => {
  const row = await revokeSubscription(context.db, subscriberOf(context), context.params.id);
  return { status: 200, body: envelope(context, viewOfSubscription(row)) };
};

export default webhooksDelete;
