import { fromJsonList } from '../db/json-lists';
import { skippingLocked } from '../db/locks';
import { inTransaction } from '../db/transactions';
import { queueDue } from '../domain/webhooks/enqueue/queues';
import { mayReceive } from '../domain/webhooks/event-types';
import type { Deps } from '../services/container';

interface OutboxEventRow {
  id: string;
  store_id: string;
  installation_id: string | null;
  type: string;
  occurred_at: number | string;
}

interface FanOutSubscription {
  id: string;
  store_id: string;
  installation_id: string;
  event_types: string;
  installation_status: string;
  granted_scopes: string;
}

/**
 * Whether a subscription is owed an event: its types include the event's; `app.uninstalled` goes
 * only to the removed installation's subscriptions, every other event only to installed apps whose
 * scopes (as they are now) allow its type, whichever app made the change.
 */
function isOwed(subscription: FanOutSubscription, event: OutboxEventRow): boolean {
  if (!fromJsonList(subscription.event_types).includes(event.type)) return false;
  if (event.type === 'app.uninstalled') return subscription.installation_id === event.installation_id;
  return subscription.installation_status === 'installed' && mayReceive(event.type, new Set(fromJsonList(subscription.granted_scopes)));
}

/** Events taken from the outbox per transaction. */
export const FAN_OUT_BATCH = 500;
/** Rows per insert statement (SQLite binds at most 32,766 values). */
export const INSERT_CHUNK = 500;

/** What one fan-out did: a batch as large as asked means more may be waiting. */
export interface FannedOut {
  readonly events: number;
  readonly deliveries: number;
}

/**
 * Turns undispatched outbox events into deliveries, one per event and subscription owed it, and
 * marks the events dispatched, in one transaction: an event is fanned out exactly once even with
 * several workers (PostgreSQL: the rows are locked, others skip them; SQLite: one writer). Only
 * `active` subscriptions get deliveries: events that occur while one is paused are not queued for it.
 */
export async function fanOut({ db, clock }: Deps, batch = FAN_OUT_BATCH): Promise<FannedOut> {
  return inTransaction(db, async (trx) => {
    const pending = trx<OutboxEventRow>('outbox_events')
      .whereNull('dispatched_at')
      .orderBy([{ column: 'occurred_at' }, { column: 'id' }])
      .limit(batch)
      .select('id', 'store_id', 'installation_id', 'type', 'occurred_at');
    const events = await skippingLocked(trx, pending);
    if (events.length === 0) return { events: 0, deliveries: 0 };
    const now = clock.now();
    const subscriptions = await trx<FanOutSubscription>('webhook_subscriptions as s')
      .join('installations as i', 'i.id', 's.installation_id')
      .whereIn('s.store_id', distinct(events.map((event) => event.store_id)))
      .where('s.state', 'active')
      .select('s.id', 's.store_id', 's.installation_id', 's.event_types', 'i.status as installation_status', 'i.granted_scopes');
    const deliveries = events.flatMap((event) =>
      subscriptions
        .filter((subscription) => subscription.store_id === event.store_id && isOwed(subscription, event))
        .map((subscription) => newDelivery(subscription, event, now)),
    );
    for (let start = 0; start < deliveries.length; start += INSERT_CHUNK) await trx('webhook_deliveries').insert(deliveries.slice(start, start + INSERT_CHUNK));
    const owed = new Set(deliveries.map((delivery) => delivery.subscription_id));
    await queueDue(
      trx,
      subscriptions
        .filter((subscription) => owed.has(subscription.id))
        .map((subscription) => ({ subscriptionId: subscription.id, storeId: subscription.store_id })),
      now,
    );
    // By the whole key, so that each event is found in its partition's key index (db/partitions.ts).
    await trx('outbox_events')
      .whereIn('store_id', distinct(events.map((event) => event.store_id)))
      .whereIn(
        'id',
        events.map((event) => event.id),
      )
      .whereIn('occurred_at', distinct(events.map((event) => Number(event.occurred_at))))
      .update({ dispatched_at: now });
    return { events: events.length, deliveries: deliveries.length };
  });
}

const distinct = <T>(values: readonly T[]): T[] => [...new Set(values)];

/** A delivery of the event to the subscription, due now; it keeps the event's time, by which the delivery log walks and deliveries expire. */
const newDelivery = (subscription: Pick<FanOutSubscription, 'id' | 'store_id'>, event: OutboxEventRow, now: number) => ({
  store_id: subscription.store_id,
  subscription_id: subscription.id,
  event_id: event.id,
  event_type: event.type,
  event_occurred_at: Number(event.occurred_at),
  kind: 'event',
  state: 'pending',
  attempts: 0,
  next_attempt_at: now,
  created_at: now,
});
