import { type WebhookEventData, type WebhookEventType, type WebhookGenericUpdates, webhookEventCatalogue } from '@svc/contract';
import { toIso } from '../core/clock';
import { orderedUuidV7s } from '../core/ids';
import type { EventTrace } from '../core/trace-context';
import { announceWebhookWork } from '../db/notifications';
import type { Db } from '../db/transactions';
import type { ExpiryRule } from './housekeeping';

/** The interface date version every event envelope carries. */
export const API_VERSION = '2026-10-15';

/**
 * An event as the code records it, typed by the contract: `type` is one of the spec's
 * `WebhookEventType`s and `data` that event's schema's `data`, so a payload that leaves the spec
 * fails `tsc`, as a handler's answer does.
 */
export interface TypedEvent<T extends WebhookEventType> {
  type: T;
  storeId: string;
  installationId?: string | null;
  occurredAt: number;
  data: WebhookEventData<T>;
  /** The trace of the request that caused it: each delivery of the event sends it as `traceparent`. */
  trace?: EventTrace;
}

/** Any one event: the union over the event types, so `type` and `data` stay paired. */
export type DomainEvent = { [T in WebhookEventType]: TypedEvent<T> }[WebhookEventType];

/**
 * Fails `tsc` unless each specific event's data is also valid data of the generic event the spec
 * pairs it with (`WebhookGenericUpdates`), which is what lets `withGenericUpdate` send the same data.
 */
type GenericUpdatesTakeTheSameData = {
  [T in keyof WebhookGenericUpdates]: WebhookEventData<T> extends WebhookEventData<WebhookGenericUpdates[T]> ? true : false;
};
const genericUpdatesTakeTheSameData: { [T in keyof WebhookGenericUpdates]: true } = {} as GenericUpdatesTakeTheSameData;
void genericUpdatesTakeTheSameData;

const GENERIC_UPDATE_OF: ReadonlyMap<WebhookEventType, WebhookEventType | null> = new Map(webhookEventCatalogue.map((event) => [event.type, event.alsoSends]));

/**
 * The events one change writes for `event`: the event, then the generic `*.updated` the spec pairs
 * with it for the same change (`order.paid` and `order.cancelled` also send `order.updated`), with
 * the same data, time and installation. The pairing is the generated catalogue's (tools/codegen,
 * `genericUpdateOf`); this is the one place it is applied, since every event goes through `recordEvent`.
 */
export function withGenericUpdate(event: DomainEvent): DomainEvent[] {
  const generic = GENERIC_UPDATE_OF.get(event.type);
  // The cast is what GenericUpdatesTakeTheSameData proves: the specific data is the generic event's data.
  return generic ? [event, { ...event, type: generic } as DomainEvent] : [event];
}

/** The webhook envelope of an event: what a receiver gets, stored as the outbox payload. */
export const envelopeOf = (id: string, event: Pick<DomainEvent, 'type' | 'storeId' | 'occurredAt' | 'data'>) => ({
  id,
  type: event.type,
  api_version: API_VERSION,
  store_id: event.storeId,
  occurred_at: toIso(event.occurredAt),
  data: event.data,
});

/**
 * Writes an event (and the generic event paired with it) to the outbox in the caller's transaction, so the event exists exactly when the
 * change it describes does. The stored payload is the webhook envelope; delivery reads it later.
 * The same transaction announces it, so the dispatchers start on it at its commit, not their next poll.
 */
export async function recordEvent(db: Db, event: DomainEvent): Promise<string[]> {
  const ids: string[] = [];
  for (const each of withGenericUpdate(event)) ids.push(await writeEvent(db, each));
  await announceWebhookWork(db);
  return ids;
}

/** Event ids of this process, in the order made within each millisecond. */
const nextEventId = orderedUuidV7s();

/**
 * An event's id is a UUIDv7 of when it occurred: it sorts by time (events of one change in the order
 * written), and it tells that an event is past the 30 days events are kept after its row is gone
 * (events.get: EVENT_EXPIRED).
 */
async function writeEvent(db: Db, event: DomainEvent): Promise<string> {
  const id = nextEventId(event.occurredAt);
  const payload = envelopeOf(id, event);
  await db('outbox_events').insert({
    id,
    store_id: event.storeId,
    installation_id: event.installationId ?? null,
    type: event.type,
    payload: JSON.stringify(payload),
    occurred_at: event.occurredAt,
    trace_parent: event.trace?.traceparent ?? null,
    trace_state: event.trace?.tracestate ?? null,
  });
  return id;
}

/** The events not fanned out yet, and how old the oldest is (0 when none): read when `/metrics` is scraped, on a partial index. */
export async function outboxBacklog(db: Db, now: number): Promise<{ waiting: number; oldestAgeSeconds: number }> {
  const [row] = await db('outbox_events').whereNull('dispatched_at').count({ waiting: '*' }).min({ oldest: 'occurred_at' });
  const oldest = row?.oldest === null || row?.oldest === undefined ? undefined : Number(row.oldest);
  return { waiting: Number(row?.waiting ?? 0), oldestAgeSeconds: oldest === undefined ? 0 : Math.max(0, (now - oldest) / 1000) };
}

/** Events are kept 30 days (what `webhooks.replay` can reach), and until they were fanned out to their deliveries. */
export const OUTBOX_KEPT_MS = 30 * 24 * 60 * 60 * 1000;

export const outboxEventsExpiry: ExpiryRule = {
  table: 'outbox_events',
  key: ['store_id', 'id', 'occurred_at'],
  // A day's partition goes whole once 30 days old, unless an event of it still waits for its fan-out (db/partitions.ts).
  partitions: { column: 'occurred_at', cutoff: (now) => now - OUTBOX_KEPT_MS, kept: (rows) => rows.whereNull('dispatched_at') },
  expired: (rows, now) => rows.whereNotNull('dispatched_at').where('occurred_at', '<=', now - OUTBOX_KEPT_MS),
};
