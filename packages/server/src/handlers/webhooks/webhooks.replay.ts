import { replayEvents } from '../../domain/webhooks/replay';
import { envelope } from '../../http/envelope';
import type { Handler } from '../../http/handler';
import { subscriberOf } from './subscriber';

/** `webhooks.replay`: POST /stores/{storeId}/v1/webhook-subscriptions/{id}/replay. Queues the range's stored events again; 202 with their count. */
const webhooksReplay: Handler<'webhooks.replay'> = async (context) => {
  const replay = await replayEvents(context.db, subscriberOf(context), context.params.id, context.body);
  return { status: 202, body: envelope(context, replay) };
};

export default webhooksReplay;
