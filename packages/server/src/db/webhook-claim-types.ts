/**
 * The webhook claim's vocabulary (docs/decisions/0070-webhook-queues.md): what a claim is asked
 * and what it answers, as the engines' statements take and give them. The claim itself is written
 * per engine (db/postgres/webhook-claims.ts, db/sqlite/webhook-claims.ts); the delivery wing makes
 * its deliveries of the rows (delivery/claim.ts).
 */

export interface ClaimLimits {
  /** Deliveries to take at most. */
  readonly take: number;
  /**
   * Attempts of one subscription on the wire at once, across workers (the worker holding its leases
   * keeps to it): a slow endpoint holds up only its own. A claim takes up to `LEASES_AHEAD` times as
   * many of one subscription's deliveries, and at least this many while there is room.
   */
  readonly perSubscription: number;
  readonly leaseMs: number;
  /** The claiming worker, the token of its leases: one subscription's live leases are one worker's. A claim of its own when left out. */
  readonly worker?: string;
}

/**
 * One subscription's deliveries a worker holds under lease, as a multiple of its attempts at once:
 * the next ones wait in the worker (delivery/hold.ts) and go out as soon as an answer frees a
 * slot, while the worker records answers and claims again in batches. Without them, a subscription
 * at its limit waited a round trip to the database for every slot that came free, and one
 * subscription's backlog drained a couple of deliveries per claim.
 */
export const LEASES_AHEAD = 8;

/**
 * How soon a queue another worker holds leases on is looked at again. Not at the end of the lease
 * just taken: the holder frees the queue when it records its answers, but a claim that began before
 * that commit counts the holder's leases as its snapshot saw them (PostgreSQL, READ COMMITTED), and
 * parking the queue for a lease then held its next deliveries back by up to a lease (45 s) for
 * nothing. A look a second costs one row of `webhook_queues`.
 */
export const HELD_ELSEWHERE_RECHECK_MS = 1000;

/**
 * Deliveries that succeeded, for the claim to record in its own statement (PostgreSQL): their
 * attempts (rows of `webhook_attempts`) and the deliveries with the claim that held them. Their
 * slots count as free in that same claim, which may take their successors at once: one round trip
 * between an answer and the next attempt of its subscription (delivery/record.ts, `recordAttempts`).
 */
export interface Delivered {
  readonly attempts: readonly object[];
  readonly deliveries: ReadonlyArray<{
    readonly storeId: string;
    readonly id: number;
    readonly createdAt: number;
    readonly token: string;
    readonly subscriptionId: string;
  }>;
}

/** One claim as an engine makes it: its limits, the instant, the lease's end and token, and what it records as delivered. */
export interface ClaimRequest {
  readonly limits: ClaimLimits;
  readonly now: number;
  readonly until: number;
  readonly token: string;
  readonly delivered?: Delivered;
}

/** A claimed delivery's row: the subscription's columns (`s.*`, as the caller reads them), with the delivery's, its event's and its installation's scopes. */
export type ClaimedRow<Subscription extends object = Readonly<Record<string, unknown>>> = Subscription & {
  readonly delivery_id: number | string;
  readonly delivery_created_at: number | string;
  readonly event_id: string;
  readonly event_type: string;
  readonly attempts: number;
  readonly payload: string | null;
  readonly receiver_scopes: string;
  readonly trace_parent: string | null;
  readonly trace_state: string | null;
};

/**
 * A delivery's event by its whole key (store, id, time), not its id alone: the outbox is
 * partitioned by `occurred_at` (db/partitions.ts), and the delivery's copy of it takes the lookup
 * to one partition's key index instead of one probe per partition.
 */
export const EVENT_OF_DELIVERY = 'o.store_id = s.store_id and o.id = d.event_id and o.occurred_at = d.event_occurred_at';

/** The columns of a {@link ClaimedRow}. */
export const CLAIMED_COLUMNS = [
  's.*',
  'd.id as delivery_id',
  'd.created_at as delivery_created_at',
  'd.event_id',
  'd.event_type',
  'd.attempts',
  'o.payload',
  'o.trace_parent',
  'o.trace_state',
  'i.granted_scopes as receiver_scopes',
];
