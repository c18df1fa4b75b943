import { randomUUID } from 'node:crypto';
import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { ApiError } from '../../core/errors';
import { readDateTime } from '../../core/instants';
import { type Db, inTransaction } from '../../db/transactions';
import { OUTBOX_KEPT_MS } from '../../services/outbox';
import { echoedInstant, queueAskedAgain } from './enqueue/asked-again';
import { typesReceivable } from './event-types';
import { keptAfter } from './events/retention';
import { STATE_RANK_SQL } from './log/queries';
import { stampedNoEarlierThan } from './stamps';
import type { Subscriber } from './subscriptions/changes';
import { lockSubscription } from './subscriptions/queries';
import { type SubscriptionRow, subscriptionRevoked } from './subscriptions/row';

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
 * subscription is 409. The answer also says what recover left to the retries (`stillRetrying`):
 * an app that asks too early learns why nothing was queued.
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
    const failed = ownDeliveries(trx, subscription, subscriber)
      .groupBy('d.event_id', 'd.event_type', 'd.event_occurred_at')
      .havingRaw(`${STATE_RANK_SQL} = ?`, [FAILED_RANK])
      .havingRaw("max(case when d.state = 'failed' then d.finished_at end) >= ?", [since])
      .select('d.event_id', 'd.event_type', 'd.event_occurred_at');
    const eventsCount = await queueAskedAgain(trx, subscription, failed, 'recover', now);
    const retrying = await stillRetrying(trx, subscription, subscriber);
    return {
      id: randomUUID(),
      since: echoedInstant(since),
      events_count: eventsCount,
      retrying_count: retrying.count,
      next_retry_at: retrying.nextAt === null ? null : echoedInstant(retrying.nextAt),
      requested_at: echoedInstant(now),
    };
  });
}

/**
 * The subscription's deliveries that recover looks at: of events still kept (so queued since they
 * occurred: the days of deliveries before are not read), of the types the subscriber's grant allows
 * now (a subscription keeps deliveries of types its installation may have lost since).
 */
const ownDeliveries = (trx: Knex.Transaction, subscription: Pick<SubscriptionRow, 'id' | 'store_id'>, subscriber: Subscriber) =>
  trx('webhook_deliveries as d')
    .where({ 'd.store_id': subscription.store_id, 'd.subscription_id': subscription.id })
    .where('d.event_occurred_at', '>', keptAfter(subscriber.now))
    .where('d.created_at', '>', stampedNoEarlierThan(keptAfter(subscriber.now)))
    .whereIn('d.event_type', typesReceivable(subscriber.scopes));

/**
 * What recover leaves to the retries: the events with a delivery that failed and has retries left
 * (pending after an attempt), which recover does not take until they are given up, and when the
 * next of those retries is due. Every such event is in any recover's range: it is given up, if ever,
 * after now. A paused subscription sends only replays and recovers, so its other retries have no
 * time until it is resumed.
 */
async function stillRetrying(
  trx: Knex.Transaction,
  subscription: Pick<SubscriptionRow, 'id' | 'store_id' | 'state'>,
  subscriber: Subscriber,
): Promise<{ count: number; nextAt: number | null }> {
  const nextAt = subscription.state === 'paused' ? "min(case when d.kind <> 'event' then d.next_attempt_at end)" : 'min(d.next_attempt_at)';
  const row = await ownDeliveries(trx, subscription, subscriber)
    .where('d.state', 'pending')
    .where('d.attempts', '>', 0)
    .first<{ n: number | string; next_at: number | string | null } | undefined>(trx.raw('count(distinct d.event_id) as n'), trx.raw(`${nextAt} as next_at`));
  return { count: Number(row?.n ?? 0), nextAt: row?.next_at === null || row?.next_at === undefined ? null : Number(row.next_at) };
}
