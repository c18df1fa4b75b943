import { rotateSecret } from '../../domain/webhooks/subscriptions/changes';
import { viewWithSecret } from '../../domain/webhooks/subscriptions/view';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/** `webhooks.rotate_secret`: POST /stores/{storeId}/v1/webhook-subscriptions/{id}/rotate-secret. The new secret, shown this once. */
const webhooksRotateSecret: Handler<'webhooks.rotate_secret'> = async (context) => {
  const { row, secret } = await rotateSecret(context.db, context.services, subscriberOf(context), context.params.id);
  return { status: 200, body: envelope(context, viewWithSecret(row, secret)) };
};

export default webhooksRotateSecret;
