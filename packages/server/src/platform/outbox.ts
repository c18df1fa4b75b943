import { randomUUID } from 'node:crypto';
import { toIso } from '../core/clock';
import type { EventTrace } from '../core/trace-context';
import { announceWebhookWork } from '../db/notifications';
import type { Db } from '../db/transactions';
import type { ExpiryRule } from './housekeeping';

/** The interface date version every event envelope carries. */
export const API_VERSION = '2026-10-15';

export interface DomainEvent {
  type: string;
  storeId: string;
  installationId?: string | null;
  occurredAt: number;
  data: Record<string, unknown>;
  /** The trace of the request that caused it: each delivery of the event sends it as `traceparent`. */
  trace?: EventTrace;
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
 * Writes an event to the outbox in the caller's transaction, so the event exists exactly when the
 * change it describes does. The stored payload is the webhook envelope; delivery reads it later.
 * The same transaction announces it, so the dispatchers start on it at its commit, not their next poll.
 */
export async function recordEvent(db: Db, event: DomainEvent): Promise<string> {
  const id = randomUUID();
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
  await announceWebhookWork(db);
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
  key: 'id',
  expired: (rows, now) => rows.whereNotNull('dispatched_at').where('occurred_at', '<=', now - OUTBOX_KEPT_MS),
};
