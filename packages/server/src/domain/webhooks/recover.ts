import { randomUUID } from 'node:crypto';
import type { components } from '@svc/contract';
import { ApiError } from '../../core/errors';
import { readDateTime } from '../../core/instants';
import { type Db, inTransaction } from '../../db/transactions';
import { OUTBOX_KEPT_MS } from '../../services/outbox';
import { echoedInstant, queueAskedAgain } from './delivery/asked-again';
import { EVENT_TYPE_SCOPES, mayReceive } from './event-types';
import { keptAfter } from './events/retention';
import { STATE_RANK_SQL } from './log/queries';
import type { Subscriber } from './subscriptions/changes';
import { lockSubscription } from './subscriptions/queries';
import { subscriptionRevoked } from './subscriptions/row';

type WebhookRecovery = components['schemas']['WebhookRecovery'];
type WebhookRecoverRequest = components['schemas']['WebhookRecoverRequest'];

const sinceInvalid = (message: string) =>
  new ApiError('VALIDATION_FAILED', 'since must lie within the last 30 days, for which events are kept, and not in the future.', {
    details: [{ location: 'body', field: '/since', message }],
  });

/** The rank `failed` has in STATE_RANK_SQL: an entry none of whose deliveries is pending or succeeded, and one failed. */
const FAILED_RANK = 2;

/**
 * webhooks.recover (Svix's recover): queues again, as deliveries of kind `recover`, the events this
 * subscription gave up on at or after `since`: exactly the delivery log's entries in state
 * `failed` (delivery/log: none of their deliveries pending or succeeded) whose last failure is at
 * or after `since`, of events still kept (30 days) and of types the subscriber's scopes allow. Each
 * keeps its event's id and body (the delivery reads them from the outbox). Delivered like any
 * delivery, also while the subscription is paused (a delivery asked for again is); a revoked
 * subscription is 409.
 */
export function recoverDeliveries(db: Db, subscriber: Subscriber, id: string, body: WebhookRecoverRequest): Promise<WebhookRecovery> {
  return inTransaction(db, async (trx) => {
    const subscription = await lockSubscription(trx, subscriber, id);
    if (subscription.state === 'revoked') throw subscriptionRevoked();
    const now = subscriber.now;
    const reading = readDateTime(body.since);
    if ('problem' in reading) throw sinceInvalid(`is ${reading.problem}`);
    const since = reading.instant;
    if (since > now) throw sinceInvalid('must not be in the future');
    if (since < now - OUTBOX_KEPT_MS) throw sinceInvalid('must be within the last 30 days, for which events are kept');
    const failed = trx('webhook_deliveries as d')
      .where('d.subscription_id', subscription.id)
      .where('d.event_occurred_at', '>', keptAfter(now))
      .whereIn('d.event_type', allowedTypes(subscriber.scopes))
      .groupBy('d.event_id', 'd.event_type', 'd.event_occurred_at')
      .havingRaw(`${STATE_RANK_SQL} = ?`, [FAILED_RANK])
      .havingRaw("max(case when d.state = 'failed' then d.finished_at end) >= ?", [since])
      .select('d.event_id', 'd.event_type', 'd.event_occurred_at');
    const eventsCount = await queueAskedAgain(trx, subscription, failed, 'recover', now);
    return { id: randomUUID(), since: echoedInstant(since), events_count: eventsCount, requested_at: echoedInstant(now) };
  });
}

/** The event types the scopes allow now (a subscription keeps deliveries of types its installation may have lost since). */
const allowedTypes = (scopes: ReadonlySet<string>): string[] => [...EVENT_TYPE_SCOPES.keys()].filter((type) => mayReceive(type, scopes));
