import { randomUUID } from 'node:crypto';
import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { ApiError } from '../../core/errors';
import { fromJsonList } from '../../db/json-lists';
import { type Db, inTransaction } from '../../db/transactions';
import { OUTBOX_KEPT_MS } from '../../services/outbox';
import { echoedInstant, queueAskedAgain } from './enqueue/asked-again';
import { mayReceive, scopesAllowing } from './event-types';
import { stampedNoEarlierThan } from './stamps';
import type { Subscriber } from './subscriptions/changes';
import { lockSubscription } from './subscriptions/queries';
import { type SubscriptionRow, subscriptionRevoked } from './subscriptions/row';

type WebhookReplay = components['schemas']['WebhookReplay'];
type WebhookReplayRequest = components['schemas']['WebhookReplayRequest'];

/** The longest range one replay takes. */
export const REPLAY_RANGE_MS = 7 * 24 * 60 * 60 * 1000;

const rangeInvalid = (field: '/from' | '/to', message: string) =>
  new ApiError('VALIDATION_FAILED', 'The replay range must be at most 7 days long and start within the last 30 days.', {
    details: [{ location: 'body', field, message }],
  });

/**
 * webhooks.replay: queues again, as deliveries of this subscription, the stored events of `[from,
 * to)` of the listed types (every type of the subscription that its scopes allow, by default), with
 * their original ids and bodies, except those that still have a delivery pending to it (queued,
 * being retried, or waiting for a paused subscription): that delivery sends them, and a replay asked
 * again and again queues each event once while it is pending. `app.uninstalled` is the
 * subscription's own installation's only; `webhook.test` events are not stored, so never replayed.
 * Delivered like any event, also while the subscription is paused.
 *
 * Replays of one subscription take their turns on its row (locked first), so each sees the
 * deliveries the one before queued. The events skipped are counted before the insert: an event
 * written into the range between the two statements is queued and counted as queued, never twice.
 */
export function replayEvents(db: Db, subscriber: Subscriber, id: string, body: WebhookReplayRequest): Promise<WebhookReplay> {
  return inTransaction(db, async (trx) => {
    const subscription = await lockSubscription(trx, subscriber, id);
    if (subscription.state === 'revoked') throw subscriptionRevoked();
    const from = Date.parse(body.from);
    const to = Date.parse(body.to);
    if (!(to > from)) throw rangeInvalid('/to', 'must be after from');
    if (to - from > REPLAY_RANGE_MS) throw rangeInvalid('/to', 'must be at most 7 days after from');
    if (from < subscriber.now - OUTBOX_KEPT_MS) throw rangeInvalid('/from', 'must be within the last 30 days, for which events are kept');
    const subscribed = fromJsonList(subscription.event_types);
    const types = body.event_types ?? subscribed.filter((type) => mayReceive(type, subscriber.scopes));
    const outside = types.findIndex((type) => !subscribed.includes(type));
    if (outside >= 0) {
      throw new ApiError('EVENT_TYPE_NOT_ALLOWED', `The event type '${types[outside]}' is not among the subscription's event types.`, {
        details: [{ location: 'body', field: `/event_types/${outside}`, message: "is not among the subscription's event types" }],
      });
    }
    scopesAllowing(types, subscriber.scopes);
    const now = subscriber.now;
    const inRange = () =>
      trx('outbox_events as o')
        .where('o.store_id', subscription.store_id)
        .whereIn('o.type', types)
        .where('o.occurred_at', '>=', from)
        .where('o.occurred_at', '<', to)
        .where((query) => query.whereNot('o.type', 'app.uninstalled').orWhere('o.installation_id', subscription.installation_id));
    const found = await inRange().first<{ n: number | string }>(trx.raw('count(*) as n'));
    const queued = await queueAskedAgain(
      trx,
      subscription,
      inRange()
        .whereNotExists(pendingDeliveryOf(trx, subscription, { from, to }))
        .select('o.id as event_id', 'o.type as event_type', 'o.occurred_at as event_occurred_at'),
      'replay',
      now,
    );
    return {
      id: randomUUID(),
      from: echoedInstant(from),
      to: echoedInstant(to),
      event_types: (types.length > 0 ? types : subscribed) as WebhookReplay['event_types'],
      events_count: queued,
      skipped_count: Math.max(0, Number(found?.n ?? 0) - queued),
      requested_at: echoedInstant(now),
    };
  });
}

/**
 * A pending delivery to the subscription of the event row `o` (correlated), by the delivery's copy
 * of the event's key; queued after the range began (the days of deliveries before it are not read).
 */
const pendingDeliveryOf = (trx: Knex.Transaction, subscription: Pick<SubscriptionRow, 'id' | 'store_id'>, range: { from: number; to: number }) =>
  trx('webhook_deliveries as d')
    .where({ 'd.store_id': subscription.store_id, 'd.subscription_id': subscription.id, 'd.state': 'pending' })
    .whereRaw('d.event_id = o.id')
    .whereRaw('d.event_occurred_at = o.occurred_at')
    .where('d.event_occurred_at', '>=', range.from)
    .where('d.event_occurred_at', '<', range.to)
    .where('d.created_at', '>=', stampedNoEarlierThan(range.from))
    .select(trx.raw('1'));
