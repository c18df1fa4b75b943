import { testSubscription } from '../../delivery/test-send';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/**
 * `webhooks.test`: POST /stores/{storeId}/v1/webhook-subscriptions/{id}/test. One attempt now, its
 * outcome answered (a failure is a 200 too); under the Idempotency-Key, a repeat answers the stored
 * outcome without sending again.
 */
const webhooksTest: Handler<'webhooks.test'> = Object.assign(
  async (context: Parameters<Handler<'webhooks.test'>>[0]) => {
    const attempt = await testSubscription(context.services, context.db, subscriberOf(context), context.params.id);
    return { status: 200 as const, body: envelope(context, attempt) };
  },
  { outsideTransaction: true as const },
);

export default webhooksTest;
