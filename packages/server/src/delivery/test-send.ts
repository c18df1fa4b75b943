import { randomUUID } from 'node:crypto';
import type { Db } from '../db/transactions';
import { eventVersionOf } from '../domain/webhooks/payloads';
import { markRevoked, type Subscriber } from '../domain/webhooks/subscriptions/changes';
import { lockSubscription } from '../domain/webhooks/subscriptions/queries';
import { type SubscriptionRow, subscriptionRevoked } from '../domain/webhooks/subscriptions/row';
import { envelopeOf } from '../services/outbox';
import { attemptRecord, type DeliveryDeps, send, viewOfAttempt, type WebhookDeliveryAttempt } from './attempt';

const TEST_MESSAGE = 'This is a test event from the Store Management Service.';

/**
 * webhooks.test: a `webhook.test` event sent now in one attempt, whatever the subscription's types
 * and also while it is paused, and recorded; never retried. A 410 revokes the subscription as for
 * any event.
 */
export async function sendTestEvent(deps: DeliveryDeps, db: Db, subscription: SubscriptionRow): Promise<WebhookDeliveryAttempt> {
  const eventId = randomUUID();
  const now = deps.clock.now();
  const body = JSON.stringify({
    ...envelopeOf(eventId, {
      type: 'webhook.test',
      storeId: subscription.store_id,
      occurredAt: now,
      data: { subscription_id: subscription.id, message: TEST_MESSAGE },
    }),
    api_version: eventVersionOf(subscription.api_version, now, deps.apiVersions),
  });
  const { outcome, at } = await send(deps, subscription, eventId, body);
  const record = attemptRecord(subscription, null, eventId, 'webhook.test', 1, outcome, at);
  await db('webhook_attempts').insert(record);
  if ('status' in outcome && outcome.status === 410) await markRevoked(db, subscription, deps.clock.now());
  return viewOfAttempt(record);
}

/** webhooks.test on the subscriber's own subscription (also while paused; 409 once revoked). */
export async function testSubscription(deps: DeliveryDeps, db: Db, subscriber: Subscriber, id: string): Promise<WebhookDeliveryAttempt> {
  const subscription = await lockSubscription(db, subscriber, id);
  if (subscription.state === 'revoked') throw subscriptionRevoked();
  return sendTestEvent(deps, db, subscription);
}
