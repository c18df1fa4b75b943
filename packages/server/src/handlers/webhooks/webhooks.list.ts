import { listSubscriptions } from '../../domain/webhooks/subscriptions/queries';
import { viewOfSubscription } from '../../domain/webhooks/subscriptions/view';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/**
 * `webhooks.list`: GET /stores/{storeId}/v1/webhook-subscriptions. Every subscription of the
 * installation (those changed after `updated_since`, when given), secrets never shown.
 */
const webhooksList: Handler<'webhooks.list'> = async (context) => {
  const rows = await listSubscriptions(context.db, subscriberOf(context), context.query);
  return { status: 200, body: envelope(context, rows.map(viewOfSubscription)) };
};

export default webhooksList;
