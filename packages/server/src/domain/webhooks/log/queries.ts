import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { toIso } from '../../../core/clock';
import { ApiError } from '../../../core/errors';
import { uuidV7Time } from '../../../core/ids';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, NEWEST_EVENT_FIRST, type Page, walkOrder } from '../../../core/paging';
import type { Db } from '../../../db/transactions';
import { typesReceivable } from '../event-types';
import { eventExpired, expiredById, isPastRetention, isPlainUuid, keptAfter } from '../events/retention';
import { stampedNoEarlierThan } from '../stamps';
import type { SubscriptionOwner } from '../subscriptions/queries';
import { type SubscriptionState, subscriptionNotFound } from '../subscriptions/row';
import { errorClassOf, shownError } from './error-class';

export type WebhookDelivery = components['schemas']['WebhookDelivery'];
export type WebhookDeliveryState = components['schemas']['WebhookDeliveryState'];
type WebhookLoggedAttempt = components['schemas']['WebhookLoggedAttempt'];
type WebhookDeliverySource = components['schemas']['WebhookDeliverySource'];

/** How many attempts one entry shows (the latest); `attempts_count` counts them all. */
export const ATTEMPTS_SHOWN = 50;

/**
 * The most deliveries of one event an entry reads: the latest, back to the one that holds its 50th
 * latest attempt. A delivery with no attempt shows none, so this caps a long run of them (a
 * subscription's deliveries cancelled unsent, replays queued while paused).
 */
export const DELIVERIES_READ = ATTEMPTS_SHOWN;

/**
 * An entry's state over all its deliveries (the spec's `WebhookDeliveryState`): the highest rank
 * among them, pending over succeeded over failed over cancelled. As SQL over a group of `d`.
 */
export const STATE_RANK_SQL = "max(case d.state when 'pending' then 4 when 'succeeded' then 3 when 'failed' then 2 else 1 end)";
const RANK_OF: Record<WebhookDeliveryState, number> = { pending: 4, succeeded: 3, failed: 2, cancelled: 1 };
const STATE_OF_RANK = new Map(Object.entries(RANK_OF).map(([state, rank]) => [rank, state as WebhookDeliveryState]));

/** Who reads a delivery log: the subscription's owner (its store and installation), the scopes its grant holds now, and when. */
export interface LogReader extends SubscriptionOwner {
  readonly scopes: ReadonlySet<string>;
  readonly now: number;
}

export interface LogFilters {
  state?: WebhookDeliveryState | undefined;
  event_type?: string | undefined;
}

/** One entry as SQL sums it up over the event's deliveries to the subscription (whatever their number). */
interface EntryRow {
  event_occurred_at: number | string;
  event_id: string;
  event_type: string;
  queued_count: number | string;
  attempts_count: number | string | null;
  state_rank: number | string;
  /** The earliest pending delivery's next attempt. */
  next_attempt_at: number | string | null;
  /** The same among replays and recovers only: what a paused subscription still sends. */
  next_asked_attempt_at: number | string | null;
  finished_at: number | string | null;
}

/** The sums of an entry, over a group of `d` by event. */
const ENTRY_COLUMNS = [
  'min(d.event_type) as event_type',
  'count(*) as queued_count',
  'sum(d.attempts) as attempts_count',
  `${STATE_RANK_SQL} as state_rank`,
  "min(case when d.state = 'pending' then d.next_attempt_at end) as next_attempt_at",
  "min(case when d.state = 'pending' and d.kind <> 'event' then d.next_attempt_at end) as next_asked_attempt_at",
  'max(d.finished_at) as finished_at',
];

interface DeliveryRow {
  id: number | string;
  event_id: string;
  kind: WebhookDeliverySource;
  created_at: number | string;
}

interface AttemptRow {
  id: string;
  delivery_id: number | string;
  event_id: string;
  attempt: number;
  outcome: 'succeeded' | 'failed';
  response_status: number | null;
  latency_ms: number;
  error: string | null;
  attempted_at: number | string;
}

/** The earliest of some instants (never spread into arguments: a page's rows are many). */
const earliestOf = (instants: readonly number[]): number => instants.reduce((earliest, instant) => Math.min(earliest, instant), Number.POSITIVE_INFINITY);

const ATTEMPT_COLUMNS = ['id', 'delivery_id', 'event_id', 'attempt', 'outcome', 'response_status', 'latency_ms', 'error', 'attempted_at'];

/** The reader's subscription (any state: a revoked one's log is still read), or 404 NOT_FOUND, another installation's too. */
async function ownSubscription(db: Db, reader: LogReader, id: string): Promise<SubscriptionState> {
  const found: { state: SubscriptionState } | undefined = isPlainUuid(id)
    ? await db('webhook_subscriptions').where({ store_id: reader.storeId, id, installation_id: reader.installationId }).first('state')
    : undefined;
  if (!found) throw subscriptionNotFound();
  return found.state;
}

/**
 * The subscription's deliveries grouped by event, summed up as entries: of the types the reader's
 * grant allows now (a type whose scope it lost is not listed).
 */
function entryRows(db: Db, reader: LogReader, subscriptionId: string): Knex.QueryBuilder {
  return db('webhook_deliveries as d')
    .where({ 'd.store_id': reader.storeId, 'd.subscription_id': subscriptionId })
    .whereIn('d.event_type', typesReceivable(reader.scopes))
    .groupBy('d.event_occurred_at', 'd.event_id')
    .select('d.event_occurred_at', 'd.event_id', ...ENTRY_COLUMNS.map((column) => db.raw(column)));
}

/**
 * Per event, its latest deliveries: back to the one that holds its `ATTEMPTS_SHOWN`th latest
 * attempt (by the deliveries' own counts), at most `DELIVERIES_READ`. Chosen in SQL, so an event
 * replayed a thousand times costs the page no more rows than one replayed once.
 */
function latestDeliveries(db: Db, storeId: string, subscriptionId: string, entries: readonly EntryRow[]): Promise<DeliveryRow[]> {
  const times = [...new Set(entries.map((entry) => Number(entry.event_occurred_at)))];
  const ranked = db('webhook_deliveries as d')
    .where({ 'd.store_id': storeId, 'd.subscription_id': subscriptionId })
    .whereIn(
      'd.event_id',
      entries.map((entry) => entry.event_id),
    )
    .whereIn('d.event_occurred_at', times)
    // Queued after the page's oldest event occurred: the days of deliveries before it are not read.
    .where('d.created_at', '>=', stampedNoEarlierThan(earliestOf(times)))
    .select(
      'd.id',
      'd.event_id',
      'd.kind',
      'd.created_at',
      db.raw('row_number() over (partition by d.event_id order by d.id desc) as newest'),
      db.raw('sum(d.attempts) over (partition by d.event_id order by d.id desc rows between unbounded preceding and 1 preceding) as attempts_after'),
    );
  return db
    .from(ranked.as('r'))
    .where('r.newest', '<=', DELIVERIES_READ)
    .where((shown) => shown.whereNull('r.attempts_after').orWhere('r.attempts_after', '<', ATTEMPTS_SHOWN))
    .orderBy('r.id')
    .select('r.id', 'r.event_id', 'r.kind', 'r.created_at');
}

/**
 * The latest `ATTEMPTS_SHOWN` attempts of each event among these deliveries, chosen in SQL by their
 * order (delivery, then attempt), and answered in it.
 */
function latestAttempts(db: Db, storeId: string, deliveries: readonly DeliveryRow[]): Promise<AttemptRow[]> {
  if (deliveries.length === 0) return Promise.resolve([]);
  const earliestQueued = earliestOf(deliveries.map((delivery) => Number(delivery.created_at)));
  const ranked = db('webhook_attempts as a')
    .where('a.store_id', storeId)
    .whereIn(
      'a.delivery_id',
      deliveries.map((delivery) => delivery.id),
    )
    // Made after the earliest of these deliveries was queued: the days of attempts before it are not read.
    .where('a.attempted_at', '>=', stampedNoEarlierThan(earliestQueued))
    .select(
      ...ATTEMPT_COLUMNS.map((column) => `a.${column}`),
      db.raw('row_number() over (partition by a.event_id order by a.delivery_id desc, a.attempt desc) as newest'),
    );
  return db
    .from(ranked.as('r'))
    .where('r.newest', '<=', ATTEMPTS_SHOWN)
    .orderBy([{ column: 'r.delivery_id' }, { column: 'r.attempt' }])
    .select(...ATTEMPT_COLUMNS.map((column) => `r.${column}`));
}

const viewOfAttempt = (row: AttemptRow, source: WebhookDeliverySource): WebhookLoggedAttempt => {
  const noAnswer = row.outcome === 'failed' && row.response_status === null;
  return {
    id: row.id,
    source,
    attempt: row.attempt,
    attempted_at: toIso(Number(row.attempted_at)),
    outcome: row.outcome,
    response_status: row.response_status,
    error_class: noAnswer ? errorClassOf(row.error) : null,
    error: noAnswer ? shownError(row.error) : row.error,
    latency_ms: row.latency_ms,
  };
};

const instantOrNull = (value: number | string | null): string | null => (value === null ? null : toIso(Number(value)));

/**
 * One entry: its sums, its latest delivery (`source`, `queued_at`) and its latest attempts. While
 * the subscription is paused, an entry pending only through deliveries of the event itself waits
 * for the resume (`paused`, no next attempt): a paused subscription sends replays and recovers only.
 */
function entryOf(row: EntryRow, deliveries: readonly DeliveryRow[], attempts: readonly AttemptRow[], subscription: SubscriptionState): WebhookDelivery {
  const latest = deliveries[deliveries.length - 1];
  if (!latest) throw new Error('an entry of the delivery log without a delivery');
  const state = STATE_OF_RANK.get(Number(row.state_rank)) ?? 'cancelled';
  const pending = state === 'pending';
  const next = subscription === 'paused' ? row.next_asked_attempt_at : row.next_attempt_at;
  const sourceOf = new Map(deliveries.map((delivery) => [String(delivery.id), delivery.kind]));
  return {
    event_id: row.event_id,
    event_type: row.event_type as WebhookDelivery['event_type'],
    occurred_at: toIso(Number(row.event_occurred_at)),
    state,
    source: latest.kind,
    queued_count: Number(row.queued_count),
    attempts_count: Number(row.attempts_count ?? 0),
    queued_at: toIso(Number(latest.created_at)),
    next_attempt_at: pending ? instantOrNull(next) : null,
    paused: pending && next === null && subscription === 'paused',
    finished_at: pending ? null : instantOrNull(row.finished_at),
    attempts: attempts.map((attempt) => viewOfAttempt(attempt, sourceOf.get(String(attempt.delivery_id)) ?? 'event')),
  };
}

/**
 * The entries of these summed-up events, in the order given: two more reads whatever the page, each
 * bounded per event in SQL (the latest deliveries, then their latest attempts).
 */
async function entriesOf(
  db: Db,
  reader: LogReader,
  subscriptionId: string,
  subscription: SubscriptionState,
  rows: readonly EntryRow[],
): Promise<WebhookDelivery[]> {
  if (rows.length === 0) return [];
  const deliveries = await latestDeliveries(db, reader.storeId, subscriptionId, rows);
  const attempts = await latestAttempts(db, reader.storeId, deliveries);
  return rows.map((row) =>
    entryOf(
      row,
      deliveries.filter((delivery) => delivery.event_id === row.event_id),
      attempts.filter((attempt) => attempt.event_id === row.event_id),
      subscription,
    ),
  );
}

/**
 * `webhooks.deliveries.list`: one keyset page of the subscription's log, newest event first
 * (`NEWEST_EVENT_FIRST`, through `(subscription_id, event_occurred_at, event_id)`), one entry per
 * event of the last 30 days whose type the reader's grant allows now; `state` is the entry's over all
 * its deliveries. The filters and the subscription travel in the cursor.
 */
export async function listDeliveries(
  db: Db,
  reader: LogReader,
  subscriptionId: string,
  filters: LogFilters,
  request: ListRequest,
): Promise<Page<WebhookDelivery>> {
  const subscription = await ownSubscription(db, reader, subscriptionId);
  const scope = { list: 'webhooks.deliveries.list', storeId: reader.storeId, filters: { subscription: subscriptionId, ...filters } };
  const read = async (after: KeysetAfter | undefined, take: number): Promise<EntryRow[]> => {
    const kept = keptAfter(reader.now);
    const rows = entryRows(db, reader, subscriptionId).where('d.event_occurred_at', '>', kept).where('d.created_at', '>', stampedNoEarlierThan(kept));
    if (filters.event_type !== undefined) rows.where('d.event_type', filters.event_type);
    if (after !== undefined) rows.whereRaw(...boundAfter(NEWEST_EVENT_FIRST, after, 'd'));
    if (filters.state !== undefined) rows.havingRaw(`${STATE_RANK_SQL} = ?`, [RANK_OF[filters.state]]);
    const page: EntryRow[] = await rows.orderByRaw(walkOrder(NEWEST_EVENT_FIRST, 'd')).limit(take);
    return page;
  };
  return keysetPage(request, scope, NEWEST_EVENT_FIRST, read, (rows) => entriesOf(db, reader, subscriptionId, subscription, rows));
}

const deliveryNotFound = () => new ApiError('NOT_FOUND', 'No delivery of this event to this webhook subscription.');

/**
 * `webhooks.deliveries.get`: the subscription's entry for the event, as the list shows it. 404
 * NOT_FOUND for another installation's subscription, an event never delivered or due to it, or one
 * of a type the reader's grant no longer allows; 404 EVENT_EXPIRED for an event past the 30 days
 * (by its UUIDv7 id once deleted, as events.get).
 */
export async function getDelivery(db: Db, reader: LogReader, subscriptionId: string, eventId: string): Promise<WebhookDelivery> {
  const subscription = await ownSubscription(db, reader, subscriptionId);
  if (!isPlainUuid(eventId)) throw deliveryNotFound();
  if (expiredById(eventId, reader.now)) throw eventExpired();
  const rows = entryRows(db, reader, subscriptionId).where('d.event_id', eventId);
  // A UUIDv7 event id is the time the event occurred: its deliveries were queued since.
  const occurredAt = uuidV7Time(eventId);
  if (occurredAt !== undefined) rows.where('d.event_occurred_at', occurredAt).where('d.created_at', '>=', stampedNoEarlierThan(occurredAt));
  const found: EntryRow[] = await rows;
  const [entry] = await entriesOf(db, reader, subscriptionId, subscription, found);
  if (!entry) throw deliveryNotFound();
  if (isPastRetention(Date.parse(entry.occurred_at), reader.now)) throw eventExpired();
  return entry;
}
