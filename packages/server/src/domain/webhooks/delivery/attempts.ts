import { randomUUID } from 'node:crypto';
import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import type { ApiVersionRegistry } from '../../../core/api-versions';
import { toIso } from '../../../core/clock';
import { groupedBy } from '../../../core/records';
import { deliveryTraceHeaders, withinTrace } from '../../../core/trace-context';
import type { Sealer } from '../../../credentials/sealing';
import { inTransaction } from '../../../db/transactions';
import { claimRecordsDelivered } from '../../../db/webhook-claims';
import type { Deps, WebhookSettings } from '../../../services/container';
import type { ExpiryRule } from '../../../services/housekeeping';
import { OUTBOX_KEPT_MS } from '../../../services/outbox';
import type { WebhookOutcome } from '../../../services/webhook-transport';
import { eventVersionOf, payloadFor } from '../payloads';
import { signedHeaders } from '../signing';
import { markRevoked, signingSecretsOrReason } from '../subscriptions/changes';
import type { SubscriptionRow } from '../subscriptions/row';
import { type Claim, type ClaimedDelivery, type ClaimLimits, claimDeliveries, type Delivered } from './claims';
import { INSERT_CHUNK } from './fan-out';
import { queueDue } from './queues';

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
 * (the worker records outcomes in batches, `recordAttempts`), except that a delivery whose event
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

/**
 * Records attempts with their consequences, in one transaction (one commit for many attempts is
 * what lets one worker on SQLite record hundreds a second): 2xx delivers; 410 revokes the
 * subscription (nothing more is sent to it); anything else is retried on the schedule, and when
 * the schedule is spent the delivery fails and an active subscription is paused with the reason.
 * A delivery's outcome is written only while its claim holds (`claim_token`).
 */
export async function recordAttempts(deps: DeliveryDeps, made: readonly AttemptMade[], random: () => number): Promise<void> {
  if (made.length === 0) return;
  const now = deps.clock.now();
  if (claimRecordsDelivered(deps.db) && made.every((attempt) => attempt.record.outcome === 'succeeded')) {
    await claimDeliveries(deps, { take: 0, perSubscription: 0, leaseMs: 0 }, deliveredOf(made));
    return;
  }
  await inTransaction(deps.db, async (trx) => {
    for (let start = 0; start < made.length; start += INSERT_CHUNK) {
      await trx('webhook_attempts').insert(made.slice(start, start + INSERT_CHUNK).map((attempt) => attempt.record));
    }
    // Each attempt's slot is free again: its queue may be claimed from now (queues.ts).
    await queueDue(trx, made.map(queueOf), now);
    const delivered = made.filter((attempt) => attempt.record.outcome === 'succeeded');
    for (const [token, attempts] of groupedBy(delivered, (attempt) => attempt.claimed.claimToken)) {
      await trx('webhook_deliveries')
        .whereIn(
          ['store_id', 'id', 'created_at'],
          attempts.map((attempt) => keyOfClaimed(attempt.claimed)),
        )
        .where({ claim_token: token })
        .update({ state: 'succeeded', attempts: trx.raw('attempts + 1'), finished_at: now, claimed_until: null });
    }
    for (const attempt of made) {
      if (attempt.record.outcome === 'succeeded') continue;
      const mine = claimedKey(attempt.claimed);
      if (attempt.status === 410) {
        await trx('webhook_deliveries').where(mine).update({ state: 'failed', attempts: attempt.record.attempt, finished_at: now, claimed_until: null });
        await markRevoked(trx, attempt.claimed.subscription, now);
      } else {
        await retryOrGiveUp(trx, deps, attempt, now, random);
      }
    }
  });
}

/**
 * PostgreSQL, a batch that all succeeded (the usual one): recorded by the claim's own statement
 * (claims.ts), so that one round trip both frees the slots and takes the deliveries that follow.
 */
export const deliveredOf = (made: readonly AttemptMade[]): Delivered => ({
  attempts: made.map((attempt) => attempt.record),
  deliveries: made.map(({ claimed }) => ({
    storeId: claimed.subscription.store_id,
    id: claimed.id,
    createdAt: claimed.createdAt,
    token: claimed.claimToken,
    subscriptionId: claimed.subscription.id,
  })),
});

/**
 * Records attempts and claims what is due next: on PostgreSQL in one round trip when they all
 * succeeded (otherwise recorded as `recordAttempts` does, then claimed); on SQLite in one
 * transaction, so one commit (one sync of its log) serves both.
 */
export async function recordAndClaim(deps: DeliveryDeps, made: readonly AttemptMade[], limits: ClaimLimits, random: () => number): Promise<Claim> {
  if (claimRecordsDelivered(deps.db)) {
    if (made.every((attempt) => attempt.record.outcome === 'succeeded')) return claimDeliveries(deps, limits, made.length > 0 ? deliveredOf(made) : undefined);
    await recordAttempts(deps, made, random);
    return claimDeliveries(deps, limits);
  }
  return inTransaction(deps.db, async (trx) => {
    const joined = { ...deps, db: trx };
    await recordAttempts(joined, made, random);
    return claimDeliveries(joined, limits);
  });
}

/** A claimed delivery's whole key (PostgreSQL prunes its writes to the delivery's day: migration 021), as `whereIn` takes it. */
const keyOfClaimed = (claimed: ClaimedDelivery) => [claimed.subscription.store_id, claimed.id, claimed.createdAt];

/** A claimed delivery's row while its claim holds: its whole key and the claim's token. */
const claimedKey = (claimed: ClaimedDelivery) => ({
  store_id: claimed.subscription.store_id,
  id: claimed.id,
  created_at: claimed.createdAt,
  claim_token: claimed.claimToken,
});

const queueOf = (attempt: AttemptMade) => queueOfClaimed(attempt.claimed);
const queueOfClaimed = (claimed: ClaimedDelivery) => ({ subscriptionId: claimed.subscription.id, storeId: claimed.subscription.store_id });

/**
 * Lets claimed deliveries go unsent: a stopping worker's, or one whose lease no longer covers an
 * attempt. Their leases end now (while the claim holds) and their queues are due, so that any
 * worker takes them at once instead of when the leases would have lapsed.
 */
export async function releaseClaims(deps: DeliveryDeps, claimed: readonly ClaimedDelivery[]): Promise<void> {
  if (claimed.length === 0) return;
  const now = deps.clock.now();
  await inTransaction(deps.db, async (trx) => {
    for (const [token, deliveries] of groupedBy(claimed, (delivery) => delivery.claimToken)) {
      for (let start = 0; start < deliveries.length; start += INSERT_CHUNK) {
        await trx('webhook_deliveries')
          .whereIn(['store_id', 'id', 'created_at'], deliveries.slice(start, start + INSERT_CHUNK).map(keyOfClaimed))
          .where({ claim_token: token, state: 'pending' })
          .update({ claimed_until: null, claim_token: null });
      }
    }
    await queueDue(trx, claimed.map(queueOfClaimed), now);
  });
}

/**
 * When the next attempt is due: the schedule's delay for this retry, ±20 % so that failed receivers
 * are not retried in lockstep, or later when the receiver asked for a longer wait (`Retry-After`),
 * which counts up to the schedule's longest delay: a receiver cannot park a delivery for longer
 * than the schedule would, nor bring a retry forward.
 */
export function nextAttemptAt(now: number, delayMs: number, random: () => number, asked?: { retryAfterMs: number; longestMs: number }): number {
  const scheduled = Math.round(delayMs * (0.8 + 0.4 * random()));
  return now + (asked ? Math.max(scheduled, Math.min(asked.retryAfterMs, asked.longestMs)) : scheduled);
}

async function retryOrGiveUp(trx: Knex.Transaction, deps: DeliveryDeps, made: AttemptMade, now: number, random: () => number): Promise<void> {
  const { claimed, record } = made;
  const mine = claimedKey(claimed);
  const schedule = deps.webhooks.retryScheduleMs;
  const delay = schedule[record.attempt - 1];
  if (delay !== undefined) {
    const asked = made.retryAfterMs === undefined ? undefined : { retryAfterMs: made.retryAfterMs, longestMs: Math.max(...schedule) };
    await trx('webhook_deliveries')
      .where(mine)
      .update({ attempts: record.attempt, next_attempt_at: nextAttemptAt(now, delay, random, asked), claimed_until: null, claim_token: null });
    return;
  }
  const failed = await trx('webhook_deliveries').where(mine).update({ state: 'failed', attempts: record.attempt, finished_at: now, claimed_until: null });
  if (failed === 0) return; // the claim was lost: whoever holds it now decides
  const reason = `Delivery paused after ${record.attempt} failed attempts to deliver event ${claimed.eventId} (${claimed.eventType}); the last: ${record.error ?? 'failed'}`;
  await trx('webhook_subscriptions')
    .where({ store_id: claimed.subscription.store_id, id: claimed.subscription.id, state: 'active' })
    .update({ state: 'paused', paused_reason: reason.slice(0, 500), updated_at: now });
}

/** Deliveries not yet expired at `now` whatever their day: pending, or carrying an event (or, untimed, finished) within the 30 days. */
const stillKept = (rows: Knex.QueryBuilder, now: number) =>
  rows.where((kept) =>
    kept
      .whereNull('finished_at')
      .orWhere('event_occurred_at', '>', now - OUTBOX_KEPT_MS)
      .orWhere((untimed) => untimed.whereNull('event_occurred_at').where('finished_at', '>', now - OUTBOX_KEPT_MS)),
  );

/**
 * What is kept of delivery: deliveries and their attempts as long as the event they carried, 30
 * days after it occurred (`event_occurred_at`; the delivery log shows no more than that), a
 * delivery once it has finished (a pending one is cancelled when claimed, its event gone). A
 * delivery written without its event's time goes 30 days after it finished. On PostgreSQL the
 * table is partitioned by day of `created_at` (migration 021): a day made 30 days ago holds
 * deliveries of events at least that old, and goes whole unless one of them is still kept
 * (pending, or an event dated later: clock skew); the row sweep takes the rest.
 */
export const webhookDeliveriesExpiry: ExpiryRule = {
  table: 'webhook_deliveries',
  key: ['store_id', 'id', 'created_at'],
  partitions: { column: 'created_at', cutoff: (now) => now - OUTBOX_KEPT_MS, kept: stillKept },
  expired: (rows, now) =>
    rows
      .whereNotNull('finished_at')
      .where((kept) =>
        kept
          .where('event_occurred_at', '<=', now - OUTBOX_KEPT_MS)
          .orWhere((untimed) => untimed.whereNull('event_occurred_at').where('finished_at', '<=', now - OUTBOX_KEPT_MS)),
      ),
};

/**
 * Attempts go with their delivery's event (swept before the deliveries, jobs/housekeeping), and in
 * any case 30 days after they were made, which is never before their event (webhooks.test's too).
 */
export const webhookAttemptsExpiry: ExpiryRule = {
  table: 'webhook_attempts',
  key: ['store_id', 'id', 'attempted_at'],
  // A day's partition goes whole once the last of its attempts is 30 days old (db/partitions.ts).
  partitions: { column: 'attempted_at', cutoff: (now) => now - OUTBOX_KEPT_MS },
  expired: (rows, now, db) =>
    rows.where((expired) =>
      expired.where('attempted_at', '<=', now - OUTBOX_KEPT_MS).orWhereIn(
        'delivery_id',
        db('webhook_deliveries')
          .select('id')
          .where('event_occurred_at', '<=', now - OUTBOX_KEPT_MS),
      ),
    ),
};
