import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { ApiError } from '../../../core/errors';
import { uuidV7Time } from '../../../core/ids';
import { parseDateTimeFilter } from '../../../core/instants';
import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, NEWEST_FIRST, type Page, walkOrder } from '../../../core/paging';
import type { Db } from '../../../db/transactions';
import { EVENT_TYPE_SCOPES, mayReceive, typesReceivable } from '../event-types';
import { payloadFor } from '../payloads';
import { CLOCK_SKEW_ALLOWED_MS, stampedNoEarlierThan } from '../stamps';
import { eventExpired, expiredById, isPastRetention, isPlainUuid, keptAfter } from './retention';

export type Event = components['schemas']['Event'];
export type EventDeliveryOutcome = components['schemas']['EventDeliveryOutcome'];

/** Who reads the feed: the token's store, installation and scopes, the request's date version, and when. */
export interface EventReader {
  readonly storeId: string;
  readonly installationId: string;
  readonly scopes: ReadonlySet<string>;
  /** The date version the answer is served under: each event is built for it, as a delivery is for its subscription's. */
  readonly apiVersion: string;
  readonly now: number;
}

export interface EventFilters {
  type?: readonly string[] | undefined;
  /** RFC 3339, as the request gave it: events after it, strictly. */
  created_since?: string | undefined;
  /** RFC 3339, as the request gave it: events before it, strictly. */
  created_before?: string | undefined;
  delivery?: EventDeliveryOutcome | undefined;
}

interface StoredEventRow {
  id: string;
  type: string;
  payload: string;
  occurred_at: number | string;
  installation_id: string | null;
}

/** `webhook.test` events are sent, never stored. */
const STORED_TYPES: readonly string[] = [...EVENT_TYPE_SCOPES.keys()].filter((type) => type !== 'webhook.test');

/** The stored event types the reader's scopes allow, as a subscription's would be. */
const visibleTypes = (scopes: ReadonlySet<string>): string[] => typesReceivable(scopes).filter((type) => STORED_TYPES.includes(type));

/** Whether the reader may see the event: its type allowed by the scopes, and `app.uninstalled` only of its own installation. */
const mayRead = (reader: EventReader, row: Pick<StoredEventRow, 'type' | 'installation_id'>): boolean =>
  STORED_TYPES.includes(row.type) && mayReceive(row.type, reader.scopes) && (row.type !== 'app.uninstalled' || row.installation_id === reader.installationId);

/** The stored body as the reader sees it: built for its date version, without the fields its scopes may not see (payloads.ts). */
const viewOf = (reader: EventReader, row: StoredEventRow): Event => JSON.parse(payloadFor(row.payload, row.type, reader.scopes, reader.apiVersion)) as Event;

/** A filter of instants: strictly after `created_since`, strictly before `created_before`, the latter after the former. */
function rangeOf(filters: EventFilters): { since: number | undefined; before: number | undefined } {
  const since = filters.created_since === undefined ? undefined : parseDateTimeFilter('created_since', filters.created_since);
  const before = filters.created_before === undefined ? undefined : parseDateTimeFilter('created_before', filters.created_before);
  if (since !== undefined && before !== undefined && before <= since) {
    throw new ApiError('INVALID_FILTER', "The filter 'created_before' must be after 'created_since'.", {
      details: [{ location: 'query', field: 'created_before', message: 'must be after created_since' }],
    });
  }
  return { since, before };
}

/**
 * The event's deliveries to the reader's installation (any of its subscriptions, any replay or
 * recover) in these states, as a subquery correlated with the event row `o`: in the reader's store,
 * by the delivery's copy of the event's key, queued since the earliest event the page can hold
 * occurred (`earliest`: the days of deliveries before are not read) and since this one did.
 */
const deliveriesIn = (db: Db, reader: Pick<EventReader, 'storeId' | 'installationId'>, earliest: number, states: readonly string[]) =>
  db('webhook_deliveries as d')
    .join('webhook_subscriptions as s', (join) => join.on('s.store_id', 'd.store_id').andOn('s.id', 'd.subscription_id'))
    .where('d.store_id', reader.storeId)
    .whereRaw('d.event_id = o.id')
    .whereRaw('d.event_occurred_at = o.occurred_at')
    .where('d.created_at', '>=', stampedNoEarlierThan(earliest))
    .whereRaw('d.created_at >= o.occurred_at - ?', [CLOCK_SKEW_ALLOWED_MS])
    .where('s.installation_id', reader.installationId)
    .whereIn('d.state', states)
    .select(db.raw('1'));

/**
 * `delivery`: pending when one delivery is pending; else succeeded when one succeeded; else failed
 * when one failed (the spec's `EventDeliveryOutcome`). The three never overlap.
 */
function whereDelivery(db: Db, query: Knex.QueryBuilder, reader: EventReader, earliest: number, outcome: EventDeliveryOutcome): void {
  const deliveries = (states: readonly string[]) => deliveriesIn(db, reader, earliest, states);
  if (outcome === 'pending') query.whereExists(deliveries(['pending']));
  if (outcome === 'succeeded') query.whereExists(deliveries(['succeeded'])).whereNotExists(deliveries(['pending']));
  if (outcome === 'failed') query.whereExists(deliveries(['failed'])).whereNotExists(deliveries(['pending', 'succeeded']));
}

/** The `type` filter as its cursor holds it: the distinct types, sorted, comma-separated (a cursor holds flat values). */
const typesKey = (types: readonly string[] | undefined): string | undefined => (types === undefined ? undefined : [...new Set(types)].sort().join(','));

/**
 * `events.list`: one keyset page of the store's events of the last 30 days that the reader may
 * see, newest first (`NEWEST_FIRST`, through `(store_id, occurred_at, id)`), each as its webhook
 * deliveries carry it. The filters travel in the cursor.
 */
export function listEvents(db: Db, reader: EventReader, filters: EventFilters, request: ListRequest): Promise<Page<Event>> {
  const { since, before } = rangeOf(filters);
  const visible = visibleTypes(reader.scopes);
  const types = filters.type === undefined ? visible : visible.filter((type) => filters.type?.includes(type));
  const scope = {
    list: 'events.list',
    storeId: reader.storeId,
    filters: { type: typesKey(filters.type), created_since: filters.created_since, created_before: filters.created_before, delivery: filters.delivery },
  };
  const read = async (after: KeysetAfter | undefined, take: number): Promise<StoredEventRow[]> => {
    if (types.length === 0) return [];
    const earliest = Math.max(keptAfter(reader.now), since ?? Number.MIN_SAFE_INTEGER);
    const rows = db<StoredEventRow>('outbox_events as o')
      .where('o.store_id', reader.storeId)
      .where('o.occurred_at', '>', earliest)
      .whereIn('o.type', types)
      .where((own) => own.whereNot('o.type', 'app.uninstalled').orWhere('o.installation_id', reader.installationId));
    if (before !== undefined) rows.where('o.occurred_at', '<', before);
    if (filters.delivery !== undefined) whereDelivery(db, rows, reader, earliest, filters.delivery);
    if (after !== undefined) rows.whereRaw(...boundAfter(NEWEST_FIRST, after, 'o'));
    return rows.orderByRaw(walkOrder(NEWEST_FIRST, 'o')).limit(take).select('o.id', 'o.type', 'o.payload', 'o.occurred_at', 'o.installation_id');
  };
  return keysetPage(request, scope, NEWEST_FIRST, read, (rows) => rows.map((row) => viewOf(reader, row)));
}

/**
 * An event's lookup by id narrowed to the instant its UUIDv7 carries, which is its `occurred_at`
 * (services/outbox.ts): on PostgreSQL the outbox is partitioned by that column, and the condition
 * takes the lookup to one partition. Ids of another version (events written before UUIDv7 ids) are
 * looked up in every partition.
 */
function withTimeOf(query: Knex.QueryBuilder, id: string): Knex.QueryBuilder {
  const at = uuidV7Time(id);
  return at === undefined ? query : query.where('occurred_at', at);
}

const eventNotFound = () => new ApiError('NOT_FOUND', 'No event with this id in this store.');

/**
 * `events.get`: the event as `events.list` shows it. 404 NOT_FOUND for an event the reader may not
 * see (another store's, a type its scopes do not allow, another installation's `app.uninstalled`)
 * or an unknown id; 404 EVENT_EXPIRED for one past the 30 days, also once deleted when its id is a
 * UUIDv7 (retention.ts).
 */
export async function getEvent(db: Db, reader: EventReader, id: string): Promise<Event> {
  if (!isPlainUuid(id)) throw eventNotFound();
  if (expiredById(id, reader.now)) throw eventExpired();
  const row: StoredEventRow | undefined = await withTimeOf(db('outbox_events').where({ id, store_id: reader.storeId }), id).first(
    'id',
    'type',
    'payload',
    'occurred_at',
    'installation_id',
  );
  if (!row || !mayRead(reader, row)) throw eventNotFound();
  if (isPastRetention(Number(row.occurred_at), reader.now)) throw eventExpired();
  return viewOf(reader, row);
}
