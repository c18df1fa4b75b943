import { randomUUID } from 'node:crypto';
import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { toIso } from '../../core/clock';
import { groupedBy } from '../../core/records';
import type { Sealer } from '../../credentials/sealing';
import { fromJsonList } from '../../db/json-lists';
import type { Db } from '../../db/transactions';
import type { ExpiryRule } from '../../platform/housekeeping';
import { envelopeOf, OUTBOX_KEPT_MS } from '../../platform/outbox';
import type { Deps, WebhookSettings } from '../../platform/services';
import type { WebhookOutcome } from '../../platform/webhook-transport';
import { mayReceive } from './event-types';
import { payloadFor } from './payloads';
import { signedHeaders } from './signing';
import { markRevoked, signingSecrets } from './subscriptions/changes';
import type { SubscriptionRow } from './subscriptions/row';

export type WebhookDeliveryAttempt = components['schemas']['WebhookDeliveryAttempt'];

/** What delivery works with: the database, the clock, the sealed secrets' key and how to reach endpoints. */
export interface DeliveryDeps extends Deps {
  readonly sealer: Sealer;
  readonly webhooks: WebhookSettings;
}

const isPostgres = (db: Db) => db.client.config.client === 'pg';

interface OutboxEventRow {
  id: string;
  store_id: string;
  installation_id: string | null;
  type: string;
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
const INSERT_CHUNK = 500;

/**
 * Turns undispatched outbox events into deliveries, one per event and subscription owed it, and
 * marks the events dispatched, in one transaction: an event is fanned out exactly once even with
 * several workers (PostgreSQL: the rows are locked, others skip them; SQLite: one writer). Only
 * `active` subscriptions get deliveries: events that occur while one is paused are not queued for it.
 * Answers how many events were taken.
 */
export async function fanOut({ db, clock }: Deps, batch = FAN_OUT_BATCH): Promise<number> {
  return db.transaction(async (trx) => {
    const pending = trx<OutboxEventRow>('outbox_events')
      .whereNull('dispatched_at')
      .orderBy([{ column: 'occurred_at' }, { column: 'id' }])
      .limit(batch)
      .select('id', 'store_id', 'installation_id', 'type');
    const events = await (isPostgres(trx) ? pending.forUpdate().skipLocked() : pending);
    if (events.length === 0) return 0;
    const now = clock.now();
    const subscriptions = await trx<FanOutSubscription>('webhook_subscriptions as s')
      .join('installations as i', 'i.id', 's.installation_id')
      .whereIn('s.store_id', [...new Set(events.map((event) => event.store_id))])
      .where('s.state', 'active')
      .select('s.id', 's.store_id', 's.installation_id', 's.event_types', 'i.status as installation_status', 'i.granted_scopes');
    const deliveries = events.flatMap((event) =>
      subscriptions
        .filter((subscription) => subscription.store_id === event.store_id && isOwed(subscription, event))
        .map((subscription) => newDelivery(subscription.id, event.id, event.type, 'event', now)),
    );
    for (let start = 0; start < deliveries.length; start += INSERT_CHUNK) await trx('webhook_deliveries').insert(deliveries.slice(start, start + INSERT_CHUNK));
    await trx('outbox_events')
      .whereIn(
        'id',
        events.map((event) => event.id),
      )
      .update({ dispatched_at: now });
    return events.length;
  });
}

export const newDelivery = (subscriptionId: string, eventId: string, eventType: string, kind: 'event' | 'replay', now: number) => ({
  subscription_id: subscriptionId,
  event_id: eventId,
  event_type: eventType,
  kind,
  state: 'pending',
  attempts: 0,
  next_attempt_at: now,
  created_at: now,
});

/** A delivery a worker holds under its lease, with what the attempt needs. */
export interface ClaimedDelivery {
  readonly id: number;
  readonly claimToken: string;
  readonly eventId: string;
  readonly eventType: string;
  /** Attempts made before this one. */
  readonly attempts: number;
  readonly payload: string | null;
  readonly subscription: SubscriptionRow;
  /** The subscribing installation's scopes now: what of the event it may see (payloads.ts). */
  readonly receiverScopes: ReadonlySet<string>;
}

type ClaimedRow = SubscriptionRow & {
  delivery_id: number | string;
  event_id: string;
  event_type: string;
  attempts: number;
  payload: string | null;
  receiver_scopes: string;
};

export interface ClaimLimits {
  /** Deliveries to take at most. */
  readonly take: number;
  /** Deliveries of one subscription under lease at once at most, across workers: a slow endpoint holds up only its own. */
  readonly perSubscription: number;
  readonly leaseMs: number;
}

/**
 * Claims due deliveries under a lease, in one statement: a delivery is due when it is pending, its
 * time has come and no live lease holds it; its subscription is active (a replay is sent while it
 * is paused too) and has fewer than `perSubscription` deliveries under lease; its installation is
 * installed, except for `app.uninstalled`. On PostgreSQL the candidate rows are locked `FOR UPDATE
 * SKIP LOCKED`, so concurrent workers take disjoint sets; the outer conditions are checked again on
 * the locked row. SQLite runs one statement at a time. A lease outlives an attempt (15 s) by far,
 * so a live worker finishes before another may take the delivery over; a dead one's lapses.
 */
export async function claimDeliveries({ db, clock }: Deps, limits: ClaimLimits): Promise<ClaimedDelivery[]> {
  const now = clock.now();
  const token = randomUUID();
  const lock = isPostgres(db) ? 'for update of d skip locked' : '';
  const claimed = await db.raw(
    `update webhook_deliveries set claimed_until = ?, claim_token = ?
     where id in (
       select d.id from webhook_deliveries d
       join webhook_subscriptions s on s.id = d.subscription_id
       join installations i on i.id = s.installation_id
       where d.state = 'pending' and d.next_attempt_at <= ? and (d.claimed_until is null or d.claimed_until <= ?)
         and (s.state = 'active' or (s.state = 'paused' and d.kind = 'replay'))
         and (i.status = 'installed' or d.event_type = 'app.uninstalled')
         and (select count(*) from webhook_deliveries c
              where c.subscription_id = d.subscription_id and c.state = 'pending' and c.claimed_until > ?) < ?
       order by d.next_attempt_at, d.id
       limit ? ${lock}
     )
     and state = 'pending' and (claimed_until is null or claimed_until <= ?)
     returning id`,
    [now + limits.leaseMs, token, now, now, now, limits.perSubscription, limits.take, now],
  );
  const ids = rowsOf<{ id: number | string }>(claimed).map((row) => Number(row.id));
  if (ids.length === 0) return [];
  const rows = await db('webhook_deliveries as d')
    .join('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .join('installations as i', 'i.id', 's.installation_id')
    .leftJoin('outbox_events as o', 'o.id', 'd.event_id')
    .where('d.claim_token', token)
    .whereIn('d.id', ids)
    .orderBy('d.id')
    .select<ClaimedRow[]>('s.*', 'd.id as delivery_id', 'd.event_id', 'd.event_type', 'd.attempts', 'o.payload', 'i.granted_scopes as receiver_scopes');
  return withinSubscriptionLimit(db, token, rows.map(claimedOf(token)), limits.perSubscription);
}

const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? []));

const claimedOf =
  (token: string) =>
  (row: ClaimedRow): ClaimedDelivery => {
    const { delivery_id, event_id, event_type, attempts, payload, receiver_scopes, ...subscription } = row;
    return {
      id: Number(delivery_id),
      claimToken: token,
      eventId: event_id,
      eventType: event_type,
      attempts,
      payload,
      subscription: subscription as SubscriptionRow,
      receiverScopes: new Set(fromJsonList(receiver_scopes)),
    };
  };

/** One claim can take several deliveries of a subscription; past its limit they are released at once for a later claim. */
async function withinSubscriptionLimit(db: Db, token: string, claimed: ClaimedDelivery[], perSubscription: number): Promise<ClaimedDelivery[]> {
  const taken = new Map<string, number>();
  const kept: ClaimedDelivery[] = [];
  const released: number[] = [];
  for (const delivery of claimed) {
    const count = taken.get(delivery.subscription.id) ?? 0;
    if (count < perSubscription) {
      taken.set(delivery.subscription.id, count + 1);
      kept.push(delivery);
    } else released.push(delivery.id);
  }
  if (released.length > 0)
    await db('webhook_deliveries').whereIn('id', released).where({ claim_token: token }).update({ claimed_until: null, claim_token: null });
  return kept;
}

/** When the next attempt is due: the schedule's delay for this retry, ±20 % so that failed receivers are not retried in lockstep. */
export function nextAttemptAt(now: number, delayMs: number, random: () => number): number {
  return now + Math.round(delayMs * (0.8 + 0.4 * random()));
}

const TEST_MESSAGE = 'This is a test event from the Store Management Service.';

/** The attempt as the spec shows it. */
interface AttemptRecord {
  id: string;
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

function attemptRecord(
  subscriptionId: string,
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
    subscription_id: subscriptionId,
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

/** Sends one signed attempt of a body to the subscription's endpoint. */
async function send(deps: DeliveryDeps, subscription: SubscriptionRow, eventId: string, body: string): Promise<{ outcome: WebhookOutcome; at: number }> {
  const at = deps.clock.now();
  const headers = signedHeaders(eventId, at, body, signingSecrets(deps.sealer, subscription, at));
  return { outcome: await deps.webhooks.transport({ url: subscription.endpoint_url, headers, body }), at };
}

/** An attempt made, waiting to be recorded with its consequence. */
export interface AttemptMade {
  readonly claimed: ClaimedDelivery;
  readonly record: AttemptRecord;
  readonly status: number | null;
}

/**
 * One attempt at a claimed delivery: the signed body sent to the endpoint. Nothing is written here
 * (the worker records outcomes in batches, `recordAttempts`), except that a delivery whose event
 * is no longer stored (swept after 30 days) is cancelled: nothing is left to send.
 */
export async function attemptDelivery(deps: DeliveryDeps, claimed: ClaimedDelivery): Promise<AttemptMade | undefined> {
  if (claimed.payload === null) {
    await deps
      .db('webhook_deliveries')
      .where({ id: claimed.id, claim_token: claimed.claimToken })
      .update({ state: 'cancelled', finished_at: deps.clock.now(), claimed_until: null });
    return undefined;
  }
  const { outcome, at } = await send(deps, claimed.subscription, claimed.eventId, payloadFor(claimed.payload, claimed.receiverScopes));
  const record = attemptRecord(claimed.subscription.id, claimed.id, claimed.eventId, claimed.eventType, claimed.attempts + 1, outcome, at);
  return { claimed, record, status: 'status' in outcome ? outcome.status : null };
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
  await deps.db.transaction(async (trx) => {
    for (let start = 0; start < made.length; start += INSERT_CHUNK) {
      await trx('webhook_attempts').insert(made.slice(start, start + INSERT_CHUNK).map((attempt) => attempt.record));
    }
    const delivered = made.filter((attempt) => attempt.record.outcome === 'succeeded');
    for (const [token, attempts] of groupedBy(delivered, (attempt) => attempt.claimed.claimToken)) {
      await trx('webhook_deliveries')
        .whereIn(
          'id',
          attempts.map((attempt) => attempt.claimed.id),
        )
        .where({ claim_token: token })
        .update({ state: 'succeeded', attempts: trx.raw('attempts + 1'), finished_at: now, claimed_until: null });
    }
    for (const attempt of made) {
      if (attempt.record.outcome === 'succeeded') continue;
      const mine = { id: attempt.claimed.id, claim_token: attempt.claimed.claimToken };
      if (attempt.status === 410) {
        await trx('webhook_deliveries').where(mine).update({ state: 'failed', attempts: attempt.record.attempt, finished_at: now, claimed_until: null });
        await markRevoked(trx, attempt.claimed.subscription.id, now);
      } else {
        await retryOrGiveUp(trx, deps, attempt, now, random);
      }
    }
  });
}

async function retryOrGiveUp(trx: Knex.Transaction, deps: DeliveryDeps, { claimed, record }: AttemptMade, now: number, random: () => number): Promise<void> {
  const mine = { id: claimed.id, claim_token: claimed.claimToken };
  const delay = deps.webhooks.retryScheduleMs[record.attempt - 1];
  if (delay !== undefined) {
    await trx('webhook_deliveries')
      .where(mine)
      .update({ attempts: record.attempt, next_attempt_at: nextAttemptAt(now, delay, random), claimed_until: null, claim_token: null });
    return;
  }
  const failed = await trx('webhook_deliveries').where(mine).update({ state: 'failed', attempts: record.attempt, finished_at: now, claimed_until: null });
  if (failed === 0) return; // the claim was lost: whoever holds it now decides
  const reason = `Delivery paused after ${record.attempt} failed attempts to deliver event ${claimed.eventId} (${claimed.eventType}); the last: ${record.error ?? 'failed'}`;
  await trx('webhook_subscriptions')
    .where({ id: claimed.subscription.id, state: 'active' })
    .update({ state: 'paused', paused_reason: reason.slice(0, 500), updated_at: now });
}

/**
 * webhooks.test: a `webhook.test` event sent now in one attempt, whatever the subscription's types
 * and also while it is paused, and recorded; never retried. A 410 revokes the subscription as for
 * any event.
 */
export async function sendTestEvent(deps: DeliveryDeps, db: Db, subscription: SubscriptionRow): Promise<WebhookDeliveryAttempt> {
  const eventId = randomUUID();
  const now = deps.clock.now();
  const body = JSON.stringify(
    envelopeOf(eventId, {
      type: 'webhook.test',
      storeId: subscription.store_id,
      occurredAt: now,
      data: { subscription_id: subscription.id, message: TEST_MESSAGE },
    }),
  );
  const { outcome, at } = await send(deps, subscription, eventId, body);
  const record = attemptRecord(subscription.id, null, eventId, 'webhook.test', 1, outcome, at);
  await db('webhook_attempts').insert(record);
  if ('status' in outcome && outcome.status === 410) await markRevoked(db, subscription.id, deps.clock.now());
  return viewOfAttempt(record);
}

/** What is kept of delivery: finished deliveries and attempts as long as the events they carried (30 days). */

export const webhookDeliveriesExpiry: ExpiryRule = {
  table: 'webhook_deliveries',
  key: 'id',
  expired: (rows, now) => rows.whereNotNull('finished_at').where('finished_at', '<=', now - OUTBOX_KEPT_MS),
};

export const webhookAttemptsExpiry: ExpiryRule = {
  table: 'webhook_attempts',
  key: 'id',
  expired: (rows, now) => rows.where('attempted_at', '<=', now - OUTBOX_KEPT_MS),
};
