import { randomUUID } from 'node:crypto';
import { isPostgres } from '../../../db/dialect';
import { fromJsonList } from '../../../db/json-lists';
import type { Db } from '../../../db/transactions';
import type { Deps } from '../../../services/container';
import type { SubscriptionRow } from '../subscriptions/row';

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
  /** The W3C trace of the request that caused the event, when one did (services/outbox). */
  readonly traceParent: string | null;
  readonly traceState: string | null;
}

type ClaimedRow = SubscriptionRow & {
  delivery_id: number | string;
  event_id: string;
  event_type: string;
  attempts: number;
  payload: string | null;
  receiver_scopes: string;
  trace_parent: string | null;
  trace_state: string | null;
};

export interface ClaimLimits {
  /** Deliveries to take at most. */
  readonly take: number;
  /** Deliveries of one subscription under lease at once at most, across workers: a slow endpoint holds up only its own. */
  readonly perSubscription: number;
  readonly leaseMs: number;
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
 * Claims due deliveries under a lease, in one statement: a delivery is due when it is pending, its
 * time has come and no live lease holds it; its subscription is active (a replay is sent while it
 * is paused too) and has fewer than `perSubscription` deliveries under lease; its installation is
 * installed, except for `app.uninstalled`. On PostgreSQL the candidate rows are locked `FOR UPDATE
 * SKIP LOCKED`, so concurrent workers take disjoint sets; the outer conditions are checked again on
 * the locked row. SQLite runs one statement at a time. A lease outlives an attempt (15 s) by far,
 * so a live worker finishes before another may take the delivery over; a dead one's lapses.
 *
 * The statement is shaped so that no plan of it grows with the backlog's square: PostgreSQL plans
 * with statistics taken before a backlog arrived (a replay adds thousands of due deliveries to a
 * table autovacuum analyzes only after a tenth of it changed). Leases are counted once per claim,
 * not per candidate row (that count was planned as a scan of every pending delivery for each
 * candidate: 14 s a claim at 10,000 due), the candidates are picked once (`= any(array(…))`, never
 * a semi-join run again per row), and the `(state, next_attempt_at, id)` index gives their order,
 * so the walk stops at the rows it takes.
 */
export async function claimDeliveries({ db, clock }: Deps, limits: ClaimLimits): Promise<Claim> {
  const now = clock.now();
  const token = randomUUID();
  const postgres = isPostgres(db);
  const claim = `update webhook_deliveries set claimed_until = ?, claim_token = ?
     where id ${postgres ? '= any(array(' : 'in ('}
       select d.id from webhook_deliveries d
       join webhook_subscriptions s on s.id = d.subscription_id
       join installations i on i.id = s.installation_id
       left join (
         select subscription_id, count(*) as n from webhook_deliveries
         where state = 'pending' and claimed_until > ? group by subscription_id
       ) leased on leased.subscription_id = d.subscription_id
       where d.state = 'pending' and d.next_attempt_at <= ? and (d.claimed_until is null or d.claimed_until <= ?)
         and (s.state = 'active' or (s.state = 'paused' and d.kind = 'replay'))
         and (i.status = 'installed' or d.event_type = 'app.uninstalled')
         and coalesce(leased.n, 0) < ?
       order by d.next_attempt_at, d.id
       limit ? ${postgres ? 'for update of d skip locked))' : ')'}
     and state = 'pending' and (claimed_until is null or claimed_until <= ?)`;
  const bindings = [now + limits.leaseMs, token, now, now, now, limits.perSubscription, limits.take, now];
  // PostgreSQL reads what it claimed in the same statement (one round trip); SQLite, in process,
  // reads it after (its update cannot feed a join).
  const rows = postgres ? await claimedAndRead(db, claim, bindings) : await claimedThenRead(db, claim, bindings, token);
  const deliveries = await withinSubscriptionLimit(db, token, rows.map(claimedOf(token)), limits.perSubscription);
  return { deliveries, full: rows.length >= limits.take };
}

const CLAIMED_COLUMNS = [
  's.*',
  'd.id as delivery_id',
  'd.event_id',
  'd.event_type',
  'd.attempts',
  'o.payload',
  'o.trace_parent',
  'o.trace_state',
  'i.granted_scopes as receiver_scopes',
];

async function claimedAndRead(db: Db, claim: string, bindings: readonly (string | number)[]): Promise<ClaimedRow[]> {
  const result = await db.raw(
    `with claimed as (${claim} returning id, subscription_id, event_id, event_type, attempts)
     select ${CLAIMED_COLUMNS.join(', ')} from claimed d
     join webhook_subscriptions s on s.id = d.subscription_id
     join installations i on i.id = s.installation_id
     left join outbox_events o on o.id = d.event_id
     order by d.id`,
    bindings,
  );
  return rowsOf<ClaimedRow>(result);
}

async function claimedThenRead(db: Db, claim: string, bindings: readonly (string | number)[], token: string): Promise<ClaimedRow[]> {
  const ids = rowsOf<{ id: number | string }>(await db.raw(`${claim} returning id`, bindings)).map((row) => Number(row.id));
  if (ids.length === 0) return [];
  return db('webhook_deliveries as d')
    .join('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .join('installations as i', 'i.id', 's.installation_id')
    .leftJoin('outbox_events as o', 'o.id', 'd.event_id')
    .where('d.claim_token', token)
    .whereIn('d.id', ids)
    .orderBy('d.id')
    .select<ClaimedRow[]>(...CLAIMED_COLUMNS);
}

const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? []));

const claimedOf =
  (token: string) =>
  (row: ClaimedRow): ClaimedDelivery => {
    const { delivery_id, event_id, event_type, attempts, payload, receiver_scopes, trace_parent, trace_state, ...subscription } = row;
    return {
      id: Number(delivery_id),
      claimToken: token,
      eventId: event_id,
      eventType: event_type,
      attempts,
      payload,
      subscription: subscription as SubscriptionRow,
      receiverScopes: new Set(fromJsonList(receiver_scopes)),
      traceParent: trace_parent ?? null,
      traceState: trace_state ?? null,
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
