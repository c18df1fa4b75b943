import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import { ApiError } from '../../../core/errors';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, NEWEST_EVENT_FIRST, type Page, walkOrder } from '../../../core/paging';
import type { Db } from '../../../db/transactions';
import { eventExpired, expiredById, isPastRetention, isPlainUuid, keptAfter } from '../events/retention';
import type { SubscriptionOwner } from '../subscriptions/queries';
import { subscriptionNotFound } from '../subscriptions/row';
import { errorClassOf } from './error-class';

export type WebhookDelivery = components['schemas']['WebhookDelivery'];
export type WebhookDeliveryState = components['schemas']['WebhookDeliveryState'];
type WebhookLoggedAttempt = components['schemas']['WebhookLoggedAttempt'];
type WebhookDeliverySource = components['schemas']['WebhookDeliverySource'];

/** How many attempts one entry shows (the latest); `attempts_count` counts them all. */
export const ATTEMPTS_SHOWN = 50;

/**
 * An entry's state over all its deliveries (the spec's `WebhookDeliveryState`): the highest rank
 * among them, pending over succeeded over failed over cancelled. As SQL over a group of `d`.
 */
export const STATE_RANK_SQL = "max(case d.state when 'pending' then 4 when 'succeeded' then 3 when 'failed' then 2 else 1 end)";
const RANK_OF: Record<WebhookDeliveryState, number> = { pending: 4, succeeded: 3, failed: 2, cancelled: 1 };
const rankOf = (state: string): number => RANK_OF[state as WebhookDeliveryState] ?? 1;

/** Who reads a delivery log: the subscription's owner (its store and installation), and when. */
export interface LogReader extends SubscriptionOwner {
  readonly now: number;
}

export interface LogFilters {
  state?: WebhookDeliveryState | undefined;
  event_type?: string | undefined;
}

interface DeliveryRow {
  id: number | string;
  event_id: string;
  event_type: string;
  event_occurred_at: number | string | null;
  kind: WebhookDeliverySource;
  state: WebhookDeliveryState;
  attempts: number;
  next_attempt_at: number | string;
  created_at: number | string;
  finished_at: number | string | null;
}

interface AttemptRow {
  id: string;
  delivery_id: number | string;
  attempt: number;
  outcome: 'succeeded' | 'failed';
  response_status: number | null;
  latency_ms: number;
  error: string | null;
  attempted_at: number | string;
}

/** The reader's subscription (any state: a revoked one's log is still read), or 404 NOT_FOUND, another installation's too. */
async function ownSubscription(db: Db, reader: LogReader, id: string): Promise<void> {
  const found = isPlainUuid(id)
    ? await db('webhook_subscriptions').where({ id, store_id: reader.storeId, installation_id: reader.installationId }).first('id')
    : undefined;
  if (!found) throw subscriptionNotFound();
}

const viewOfAttempt = (row: AttemptRow, source: WebhookDeliverySource): WebhookLoggedAttempt => ({
  id: row.id,
  source,
  attempt: row.attempt,
  attempted_at: toIso(Number(row.attempted_at)),
  outcome: row.outcome,
  response_status: row.response_status,
  error_class: row.outcome === 'failed' && row.response_status === null ? errorClassOf(row.error) : null,
  error: row.error,
  latency_ms: row.latency_ms,
});

/** One entry: the event's deliveries to the subscription (by id, oldest first) and their attempts. */
function entryOf(deliveries: readonly DeliveryRow[], attempts: readonly AttemptRow[]): WebhookDelivery {
  const [first] = deliveries;
  const latest = deliveries[deliveries.length - 1];
  if (!first || !latest) throw new Error('an entry of the delivery log without a delivery');
  const state = deliveries.reduce((best, delivery) => (rankOf(delivery.state) > rankOf(best) ? delivery.state : best), first.state);
  const pending = deliveries.filter((delivery) => delivery.state === 'pending').map((delivery) => Number(delivery.next_attempt_at));
  const finished = deliveries.flatMap((delivery) => (delivery.finished_at === null ? [] : [Number(delivery.finished_at)]));
  const sourceOf = new Map(deliveries.map((delivery) => [String(delivery.id), delivery.kind]));
  return {
    event_id: first.event_id,
    event_type: first.event_type as WebhookDelivery['event_type'],
    occurred_at: toIso(Number(first.event_occurred_at ?? first.created_at)),
    state,
    source: latest.kind,
    queued_count: deliveries.length,
    attempts_count: deliveries.reduce((total, delivery) => total + Number(delivery.attempts), 0),
    queued_at: toIso(Number(latest.created_at)),
    next_attempt_at: state === 'pending' && pending.length > 0 ? toIso(Math.min(...pending)) : null,
    finished_at: state === 'pending' || finished.length === 0 ? null : toIso(Math.max(...finished)),
    attempts: attempts.slice(-ATTEMPTS_SHOWN).map((attempt) => viewOfAttempt(attempt, sourceOf.get(String(attempt.delivery_id)) ?? 'event')),
  };
}

/** The entries of these events in the subscription's log, in the order given (two reads: the deliveries, then their attempts). */
async function entriesOf(db: Db, storeId: string, subscriptionId: string, eventIds: readonly string[]): Promise<WebhookDelivery[]> {
  if (eventIds.length === 0) return [];
  const deliveries = await db<DeliveryRow>('webhook_deliveries')
    .where('store_id', storeId)
    .where('subscription_id', subscriptionId)
    .whereIn('event_id', eventIds)
    .orderBy('id')
    .select('id', 'event_id', 'event_type', 'event_occurred_at', 'kind', 'state', 'attempts', 'next_attempt_at', 'created_at', 'finished_at');
  if (deliveries.length === 0) return [];
  const attempts = await db<AttemptRow>('webhook_attempts')
    .where('store_id', storeId)
    .whereIn(
      'delivery_id',
      deliveries.map((delivery) => delivery.id),
    )
    // No attempt precedes its delivery: on PostgreSQL this leaves out the partitions of the days before them (db/partitions.ts).
    .where('attempted_at', '>=', Math.min(...deliveries.map((delivery) => Number(delivery.created_at))))
    .orderBy([{ column: 'attempted_at' }, { column: 'delivery_id' }, { column: 'attempt' }])
    .select('id', 'delivery_id', 'attempt', 'outcome', 'response_status', 'latency_ms', 'error', 'attempted_at');
  const eventOf = new Map(deliveries.map((delivery) => [String(delivery.id), delivery.event_id]));
  return eventIds.flatMap((eventId) => {
    const own = deliveries.filter((delivery) => delivery.event_id === eventId);
    return own.length === 0
      ? []
      : [
          entryOf(
            own,
            attempts.filter((attempt) => eventOf.get(String(attempt.delivery_id)) === eventId),
          ),
        ];
  });
}

/**
 * `webhooks.deliveries.list`: one keyset page of the subscription's log, newest event first
 * (`NEWEST_EVENT_FIRST`, through `(subscription_id, event_occurred_at, event_id)`), one entry per
 * event of the last 30 days; `state` is the entry's over all its deliveries. The filters and the
 * subscription travel in the cursor.
 */
export async function listDeliveries(
  db: Db,
  reader: LogReader,
  subscriptionId: string,
  filters: LogFilters,
  request: ListRequest,
): Promise<Page<WebhookDelivery>> {
  await ownSubscription(db, reader, subscriptionId);
  const scope = { list: 'webhooks.deliveries.list', storeId: reader.storeId, filters: { subscription: subscriptionId, ...filters } };
  const read = (after: KeysetAfter | undefined, take: number) => {
    const rows = db('webhook_deliveries as d')
      .where({ 'd.store_id': reader.storeId, 'd.subscription_id': subscriptionId })
      .where('d.event_occurred_at', '>', keptAfter(reader.now));
    if (filters.event_type !== undefined) rows.where('d.event_type', filters.event_type);
    if (after !== undefined) rows.whereRaw(...boundAfter(NEWEST_EVENT_FIRST, after, 'd'));
    rows.groupBy('d.event_occurred_at', 'd.event_id');
    if (filters.state !== undefined) rows.havingRaw(`${STATE_RANK_SQL} = ?`, [RANK_OF[filters.state]]);
    return rows
      .orderByRaw(walkOrder(NEWEST_EVENT_FIRST, 'd'))
      .limit(take)
      .select<{ event_occurred_at: number | string; event_id: string }[]>('d.event_occurred_at', 'd.event_id');
  };
  return keysetPage(request, scope, NEWEST_EVENT_FIRST, read, (rows) =>
    entriesOf(
      db,
      reader.storeId,
      subscriptionId,
      rows.map((row) => row.event_id),
    ),
  );
}

const deliveryNotFound = () => new ApiError('NOT_FOUND', 'No delivery of this event to this webhook subscription.');

/**
 * `webhooks.deliveries.get`: the subscription's entry for the event, as the list shows it. 404
 * NOT_FOUND for another installation's subscription or an event never delivered or due to it;
 * 404 EVENT_EXPIRED for an event past the 30 days (by its UUIDv7 id once deleted, as events.get).
 */
export async function getDelivery(db: Db, reader: LogReader, subscriptionId: string, eventId: string): Promise<WebhookDelivery> {
  await ownSubscription(db, reader, subscriptionId);
  if (!isPlainUuid(eventId)) throw deliveryNotFound();
  if (expiredById(eventId, reader.now)) throw eventExpired();
  const [entry] = await entriesOf(db, reader.storeId, subscriptionId, [eventId]);
  if (!entry) throw deliveryNotFound();
  if (isPastRetention(Date.parse(entry.occurred_at), reader.now)) throw eventExpired();
  return entry;
}
