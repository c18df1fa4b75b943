import { randomUUID } from 'node:crypto';
import { fromJsonList } from '../db/json-lists';
import { type ClaimedRow, type ClaimLimits, claimWebhookDeliveries, type Delivered } from '../db/webhook-claims';
import type { SubscriptionRow } from '../domain/webhooks/subscriptions/row';
import type { Deps } from '../services/container';

/** A delivery a worker holds under its lease, with what the attempt needs. */
export interface ClaimedDelivery {
  readonly id: number;
  /** The delivery's partition key on PostgreSQL (migration 021): with `store_id` and `id`, its whole key, which takes a write to one partition. */
  readonly createdAt: number;
  readonly claimToken: string;
  readonly eventId: string;
  readonly eventType: string;
  /** Attempts made before this one. */
  readonly attempts: number;
  readonly payload: string | null;
  readonly subscription: SubscriptionRow;
  /** The subscribing installation's scopes now: what of the event it may see (domain/webhooks/payloads.ts). */
  readonly receiverScopes: ReadonlySet<string>;
  /** The W3C trace of the request that caused the event, when one did (services/outbox). */
  readonly traceParent: string | null;
  readonly traceState: string | null;
  /** When the claim's lease ends (epoch ms): an attempt that could not end before it is not started. */
  readonly leaseEnd: number;
}

export interface Claim {
  readonly deliveries: ClaimedDelivery[];
  /**
   * The claim found as many due deliveries as it asked for: more may be due, so the worker claims
   * again as soon as it has room instead of waiting for its poll.
   */
  readonly full: boolean;
}

/**
 * Claims due deliveries under a lease. A delivery is due when it is pending, its time has come and
 * no live lease holds it; its subscription is active (or paused, for a delivery asked for again);
 * its installation is installed, except for `app.uninstalled`. A subscription's deliveries are
 * taken only by the worker holding its live leases, if any (so its attempts at once are counted in
 * one place), up to `LEASES_AHEAD × perSubscription` under lease; when several queues are due, a
 * claim's share of each is its part of `take`, and never less than `perSubscription`.
 *
 * A delivery asked for again (a replay or a recover, any kind but `event`) is sent while the
 * subscription is paused: that is how a paused subscription gets what it missed.
 *
 * The work follows what is taken, never the backlog: the claim reads the subscriptions' queues that
 * are due (`webhook_queues`, oldest first), counts each one's live leases, the claiming worker's and
 * the others' (through the lease index: a few rows), takes its oldest due deliveries up to its room through `(subscription_id, state,
 * next_attempt_at, id)`, and moves each queue on: to its next due delivery, or, at its limit, to the
 * end of the leases just taken (a recorded attempt brings it back at once: domain/webhooks/enqueue/queues.ts). A subscription
 * at its limit with thousands due behind it costs a claim nothing. On PostgreSQL this is one
 * statement: the queues and deliveries taken are locked `FOR UPDATE SKIP LOCKED`, so concurrent
 * workers take disjoint sets; SQLite runs it as a few statements in one transaction (one writer). A
 * lease outlives an attempt (15 s) by far, so a live worker finishes before another may take the
 * delivery over; a dead one's lapses, and its queue is due again by then.
 */
export async function claimDeliveries({ db, clock }: Deps, limits: ClaimLimits, delivered?: Delivered): Promise<Claim> {
  const now = clock.now();
  const token = limits.worker ?? randomUUID();
  const until = now + limits.leaseMs;
  const rows = await claimWebhookDeliveries<SubscriptionRow>(db, { limits, now, until, token, ...(delivered ? { delivered } : {}) });
  return { deliveries: rows.map(claimedOf(token, until)), full: rows.length >= limits.take };
}

const claimedOf =
  (token: string, leaseEnd: number) =>
  (row: ClaimedRow<SubscriptionRow>): ClaimedDelivery => {
    const { delivery_id, delivery_created_at, event_id, event_type, attempts, payload, receiver_scopes, trace_parent, trace_state, ...subscription } = row;
    return {
      id: Number(delivery_id),
      createdAt: Number(delivery_created_at),
      claimToken: token,
      eventId: event_id,
      eventType: event_type,
      attempts,
      payload,
      subscription,
      receiverScopes: new Set(fromJsonList(receiver_scopes)),
      traceParent: trace_parent ?? null,
      traceState: trace_state ?? null,
      leaseEnd,
    };
  };

/** A claimed delivery's whole key (PostgreSQL prunes its writes to the delivery's day: migration 021), as `whereIn` takes it. */
export const keyOfClaimed = (claimed: ClaimedDelivery) => [claimed.subscription.store_id, claimed.id, claimed.createdAt];

/** A claimed delivery's row while its claim holds: its whole key and the claim's token. */
export const claimedKey = (claimed: ClaimedDelivery) => ({
  store_id: claimed.subscription.store_id,
  id: claimed.id,
  created_at: claimed.createdAt,
  claim_token: claimed.claimToken,
});
