import { randomUUID } from 'node:crypto';
import type { components } from '@svc/contract';
import type { ApiVersionRegistry } from '../core/api-versions';
import { toIso } from '../core/clock';
import { deliveryTraceHeaders, withinTrace } from '../core/trace-context';
import type { Sealer } from '../credentials/sealing';
import { eventVersionOf, payloadFor } from '../domain/webhooks/payloads';
import { signedHeaders } from '../domain/webhooks/signing';
import { signingSecretsOrReason } from '../domain/webhooks/subscriptions/changes';
import type { SubscriptionRow } from '../domain/webhooks/subscriptions/row';
import type { Deps, WebhookSettings } from '../services/container';
import type { WebhookOutcome } from '../services/webhook-transport';
import { type ClaimedDelivery, claimedKey } from './claim';

export type WebhookDeliveryAttempt = components['schemas']['WebhookDeliveryAttempt'];

/** What delivery works with: the database, the clock, the sealed secrets' key and how to reach endpoints. */
export interface DeliveryDeps extends Deps {
  readonly sealer: Sealer;
  readonly webhooks: WebhookSettings;
  /** The date versions events are built for (payloads.ts); the published registry when left out. */
  readonly apiVersions?: ApiVersionRegistry;
}

/** The attempt as the spec shows it. */
export interface AttemptRecord {
  id: string;
  /** The subscription's store: the table's key leads with it (sharding by store). */
  store_id: string;
  subscription_id: string;
  delivery_id: number | null;
  event_id: string;
  event_type: string;
  attempt: number;
  outcome: 'succeeded' | 'failed';
  response_status: number | null;
  latency_ms: number;
  error: string | null;
  attempted_at: number;
}

const MAX_LATENCY_MS = 60_000;

export function attemptRecord(
  subscription: Pick<SubscriptionRow, 'id' | 'store_id'>,
  deliveryId: number | null,
  eventId: string,
  eventType: string,
  attempt: number,
  outcome: WebhookOutcome,
  at: number,
): AttemptRecord {
  const status = 'status' in outcome ? outcome.status : null;
  const succeeded = status !== null && status >= 200 && status < 300;
  const error = 'error' in outcome ? outcome.error : succeeded ? null : `The endpoint answered ${status}.`;
  return {
    id: randomUUID(),
    store_id: subscription.store_id,
    subscription_id: subscription.id,
    delivery_id: deliveryId,
    event_id: eventId,
    event_type: eventType,
    attempt,
    outcome: succeeded ? 'succeeded' : 'failed',
    response_status: status !== null && status >= 100 && status <= 599 ? status : null,
    latency_ms: Math.min(MAX_LATENCY_MS, Math.max(0, Math.round(outcome.latencyMs))),
    error: error === null ? null : error.slice(0, 500),
    attempted_at: at,
  };
}

export const viewOfAttempt = (record: AttemptRecord): WebhookDeliveryAttempt => ({
  id: record.id,
  event_id: record.event_id,
  event_type: record.event_type as WebhookDeliveryAttempt['event_type'],
  attempt: record.attempt,
  outcome: record.outcome,
  response_status: record.response_status,
  latency_ms: record.latency_ms,
  error: record.error,
  attempted_at: toIso(record.attempted_at),
});

/** The W3C trace an attempt continues: the event's (the request that caused it), when it has one. */
export interface AttemptTrace {
  readonly traceParent: string | null;
  readonly traceState: string | null;
}

/**
 * Sends one signed attempt of a body to the subscription's endpoint, with a `traceparent` of the
 * event's trace when it has one (and, when OpenTelemetry runs, inside that trace, so its client
 * span is the attempt's).
 */
export async function send(
  deps: DeliveryDeps,
  subscription: SubscriptionRow,
  eventId: string,
  body: string,
  trace?: AttemptTrace,
): Promise<{ outcome: WebhookOutcome; at: number }> {
  const at = deps.clock.now();
  const signing = signingSecretsOrReason(deps.sealer, subscription, at);
  if ('error' in signing) return { outcome: { error: signing.error, latencyMs: 0 }, at };
  const headers = { ...deliveryTraceHeaders(trace?.traceParent, trace?.traceState), ...signedHeaders(eventId, at, body, signing.secrets) };
  const outcome = await withinTrace(trace?.traceParent, trace?.traceState, () => deps.webhooks.transport({ url: subscription.endpoint_url, headers, body }));
  return { outcome, at };
}

/** An attempt made, waiting to be recorded with its consequence. */
export interface AttemptMade {
  readonly claimed: ClaimedDelivery;
  readonly record: AttemptRecord;
  readonly status: number | null;
  /** How long the receiver asked us to wait (`Retry-After` on a 429 or 503). */
  readonly retryAfterMs?: number;
  /** What the operator's log gets of a failure without an answer (names, addresses): never stored, never shown to the app. */
  readonly detail?: string;
}

/**
 * One attempt at a claimed delivery: the signed body sent to the endpoint. Nothing is written here
 * (the worker records outcomes in batches: record.ts, `recordAttempts`), except that a delivery whose event
 * is no longer stored (swept after 30 days) is cancelled: nothing is left to send.
 */
export async function attemptDelivery(deps: DeliveryDeps, claimed: ClaimedDelivery): Promise<AttemptMade | undefined> {
  if (claimed.payload === null) {
    await deps.db('webhook_deliveries').where(claimedKey(claimed)).update({ state: 'cancelled', finished_at: deps.clock.now(), claimed_until: null });
    return undefined;
  }
  const body = payloadFor(
    claimed.payload,
    claimed.eventType,
    claimed.receiverScopes,
    eventVersionOf(claimed.subscription.api_version, deps.clock.now(), deps.apiVersions),
  );
  const { outcome, at } = await send(deps, claimed.subscription, claimed.eventId, body, claimed);
  const record = attemptRecord(claimed.subscription, claimed.id, claimed.eventId, claimed.eventType, claimed.attempts + 1, outcome, at);
  if (!('status' in outcome))
    return outcome.detail === undefined ? { claimed, record, status: null } : { claimed, record, status: null, detail: outcome.detail };
  return outcome.retryAfterMs === undefined
    ? { claimed, record, status: outcome.status }
    : { claimed, record, status: outcome.status, retryAfterMs: outcome.retryAfterMs };
}
