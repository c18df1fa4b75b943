import { randomUUID } from 'node:crypto';
import type { components } from '@svc/contract';
import { ApiError } from '../../core/errors';
import { readDateTime } from '../../core/instants';
import { isPostgres } from '../../db/dialect';
import { announceWebhookWork } from '../../db/notifications';
import { type Db, inTransaction } from '../../db/transactions';
import { OUTBOX_KEPT_MS } from '../../services/outbox';
import { queueDue } from './delivery/queues';
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

/** An instant as the answer echoes it: UTC, to the second (milliseconds only when there are any), as webhooks.replay does. */
const echoed = (instant: number) => new Date(instant).toISOString().replace('.000Z', 'Z');

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
    // One statement, so what is queued is what it found failed. PostgreSQL counts it with `returning`
    // (a delivery may fail meanwhile: it is queued and counted, or neither); SQLite, whose writing
    // transaction holds its one write lock, counts the same rows before (knex drops `returning`
    // from an insert of a select there).
    const counting = trx.from(failed.clone().as('f')).count<{ n: number | string }[]>({ n: '*' });
    const insert = trx
      .into(
        trx.raw('?? (??, ??, ??, ??, ??, ??, ??, ??, ??)', [
          'webhook_deliveries',
          'subscription_id',
          'event_id',
          'event_type',
          'event_occurred_at',
          'kind',
          'state',
          'attempts',
          'next_attempt_at',
          'created_at',
        ]),
      )
      .insert(
        trx
          .from(failed.as('f'))
          .select(
            trx.raw('? as subscription_id', [subscription.id]),
            'f.event_id',
            'f.event_type',
            'f.event_occurred_at',
            trx.raw("'recover' as kind"),
            trx.raw("'pending' as state"),
            trx.raw('0 as attempts'),
            trx.raw('? as next_attempt_at', [now]),
            trx.raw('? as created_at', [now]),
          ),
      );
    let eventsCount: number;
    if (isPostgres(trx)) {
      eventsCount = (await insert.returning('id')).length;
    } else {
      const [counted] = await counting;
      await insert;
      eventsCount = Number(counted?.n ?? 0);
    }
    if (eventsCount > 0) {
      await queueDue(trx, [{ subscriptionId: subscription.id, storeId: subscription.store_id }], now);
      await announceWebhookWork(trx);
    }
    return { id: randomUUID(), since: echoed(since), events_count: eventsCount, requested_at: echoed(now) };
  });
}

/** The event types the scopes allow now (a subscription keeps deliveries of types its installation may have lost since). */
const allowedTypes = (scopes: ReadonlySet<string>): string[] => [...EVENT_TYPE_SCOPES.keys()].filter((type) => mayReceive(type, scopes));
