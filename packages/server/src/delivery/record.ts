import type { Knex } from 'knex';
import { groupedBy } from '../core/records';
import { inTransaction } from '../db/transactions';
import { type ClaimLimits, claimRecordsDelivered, type Delivered } from '../db/webhook-claims';
import { queueDue } from '../domain/webhooks/enqueue/queues';
import { markRevoked } from '../domain/webhooks/subscriptions/changes';
import type { AttemptMade, DeliveryDeps } from './attempt';
import { type Claim, type ClaimedDelivery, claimDeliveries, claimedKey, keyOfClaimed } from './claim';
import { INSERT_CHUNK } from './fan-out';

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
    // Each attempt's slot is free again: its queue may be claimed from now (domain/webhooks/enqueue/queues.ts).
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
 * (claim.ts), so that one round trip both frees the slots and takes the deliveries that follow.
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
