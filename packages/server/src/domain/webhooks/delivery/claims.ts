import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isPostgres } from '../../../db/dialect';
import { fromJsonList } from '../../../db/json-lists';
import { preparedRows } from '../../../db/prepared-statements';
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
 * Claims due deliveries under a lease. A delivery is due when it is pending, its time has come and
 * no live lease holds it; its subscription is active (or paused, for a delivery asked for again) and has fewer than `perSubscription` deliveries under lease; its installation is installed,
 * except for `app.uninstalled`.
 *
 * A delivery asked for again (a replay or a recover, any kind but `event`) is sent while the
 * subscription is paused: that is how a paused subscription gets what it missed.
 *
 * The work follows what is taken, never the backlog: the claim reads the subscriptions' queues that
 * are due (`webhook_queues`, oldest first), counts each one's live leases (at most its limit of
 * rows), takes its oldest due deliveries up to its free slots through `(subscription_id, state,
 * next_attempt_at, id)`, and moves each queue on: to its next due delivery, or, at its limit, to the
 * end of the leases just taken (a recorded attempt brings it back at once: queues.ts). A subscription
 * at its limit with thousands due behind it costs a claim nothing. On PostgreSQL this is one
 * statement: the queues and deliveries taken are locked `FOR UPDATE SKIP LOCKED`, so concurrent
 * workers take disjoint sets; SQLite runs it as a few statements in one transaction (one writer). A
 * lease outlives an attempt (15 s) by far, so a live worker finishes before another may take the
 * delivery over; a dead one's lapses, and its queue is due again by then.
 */
export async function claimDeliveries({ db, clock }: Deps, limits: ClaimLimits, delivered?: Delivered): Promise<Claim> {
  const now = clock.now();
  const token = randomUUID();
  const until = now + limits.leaseMs;
  if (delivered && !isPostgres(db)) throw new Error('Only PostgreSQL records deliveries in the claim');
  const rows = isPostgres(db)
    ? await claimOnPostgres(db, limits, now, until, token, delivered ?? { attempts: [], deliveries: [] })
    : await claimOnSqlite(db, limits, now, until, token);
  return { deliveries: rows.map(claimedOf(token)), full: rows.length >= limits.take };
}

/**
 * Deliveries that succeeded, for the claim to record in its own statement (PostgreSQL): their
 * attempts (rows of `webhook_attempts`) and the deliveries with the claim that held them. Their
 * slots count as free in that same claim, which may take their successors at once: one round trip
 * between an answer and the next attempt of its subscription (attempts.ts, `recordAttempts`).
 */
export interface Delivered {
  readonly attempts: readonly object[];
  readonly deliveries: ReadonlyArray<{ readonly id: number; readonly token: string }>;
}

/**
 * Which of a queue's deliveries a claim may send now, given its subscription's state and its
 * installation's status (SQL over `d`, `q`). `q.sends_all` comes first and alone decides for an
 * active subscription of an installed app, the usual queue: PostgreSQL then takes the condition as
 * a test of the queue, not of each delivery, and reads the queue's due deliveries in index order up
 * to the few it takes. Spelled out per delivery only (`kind`, `event_type`), it misjudged how many
 * would pass, planned a scan and a sort of the whole backlog, and a claim took 4 ms instead of 0.1.
 */
const SENDABLE = `(q.sends_all or ((q.subscription_state = 'active' or (q.subscription_state = 'paused' and d.kind <> 'event'))
  and (q.installation_status = 'installed' or d.event_type = 'app.uninstalled')))`;

async function claimOnPostgres(db: Db, limits: ClaimLimits, now: number, until: number, token: string, delivered: Delivered): Promise<ClaimedRow[]> {
  const bindings = {
    now,
    until,
    token,
    cap: limits.perSubscription,
    take: limits.take,
    attempts: JSON.stringify(delivered.attempts),
    // Arrays rather than JSON: PostgreSQL reads a handful of rows from them by primary key, where a
    // JSON record set (estimated at 100 rows) made it scan every delivery.
    delivered_ids: `{${delivered.deliveries.map((delivery) => delivery.id).join(',')}}`,
    delivered_tokens: `{${delivered.deliveries.map((delivery) => delivery.token).join(',')}}`,
  };
  // Prepared once per connection (db/prepared-statements.ts): planning this statement costs more
  // than running it. The parameters are typed in `params`: PostgreSQL cannot infer a parameter's
  // type inside `case` and `coalesce`.
  return preparedRows<ClaimedRow>(
    db,
    `with params as (select cast(:now as bigint) as now, cast(:until as bigint) as until),
     recorded as (
       insert into webhook_attempts select * from json_populate_recordset(null::webhook_attempts, cast(:attempts as json))
     ),
     done as (
       update webhook_deliveries d set state = 'succeeded', attempts = d.attempts + 1, finished_at = :now, claimed_until = null
       from unnest(cast(:delivered_ids as bigint[]), cast(:delivered_tokens as uuid[])) as mine(id, token)
       where d.id = mine.id and d.claim_token = mine.token
       returning d.id, d.subscription_id
     ),
     due as (
       select w.subscription_id, w.next_due_at, s.state as subscription_state, i.status as installation_status,
         s.state = 'active' and i.status = 'installed' as sends_all
       from webhook_queues w
       join webhook_subscriptions s on s.id = w.subscription_id
       join installations i on i.id = s.installation_id
       where w.next_due_at <= :now or w.subscription_id in (select subscription_id from done)
       order by w.next_due_at
       limit :take
       for update of w skip locked
     ),
     q as (
       select due.*, row_number() over (order by due.next_due_at) as turn,
         (select count(*) from webhook_deliveries l
          where l.subscription_id = due.subscription_id and l.state = 'pending' and l.claimed_until > :now
            and l.id not in (select id from done)) as leased
       from due
     ),
     picked as (
       select d.id, q.subscription_id from q
       cross join lateral (
         select d.id, d.next_attempt_at from webhook_deliveries d
         where d.subscription_id = q.subscription_id and d.state = 'pending' and d.next_attempt_at <= :now
           and (d.claimed_until is null or d.claimed_until <= :now) and ${SENDABLE}
         order by d.next_attempt_at, d.id
         limit greatest(0, :cap - q.leased)
         for update of d skip locked
       ) d
       order by q.turn, d.next_attempt_at, d.id
       limit :take
     ),
     claimed as (
       update webhook_deliveries d set claimed_until = :until, claim_token = :token
       from picked where d.id = picked.id
       returning d.id, d.subscription_id, d.event_id, d.event_type, d.attempts
     ),
     moved as (
       update webhook_queues w set next_due_at = case
         when q.leased + coalesce(taken.n, 0) >= :cap then (select until from params)
         else least(
           (select d.next_attempt_at from webhook_deliveries d
            where d.subscription_id = q.subscription_id and d.state = 'pending'
              and (d.claimed_until is null or d.claimed_until <= :now) and ${SENDABLE}
              and d.id not in (select id from picked)
            order by d.next_attempt_at, d.id limit 1),
           case when q.leased + coalesce(taken.n, 0) > 0 then (select until from params) end)
         end
       from q left join (select subscription_id, count(*) as n from picked group by subscription_id) taken on taken.subscription_id = q.subscription_id
       where w.subscription_id = q.subscription_id
     ),
     freed as (
       update webhook_queues w set next_due_at = (select now from params)
       where w.subscription_id in (select subscription_id from done) and w.subscription_id not in (select subscription_id from due)
         and (w.next_due_at is null or w.next_due_at > :now)
     )
     select ${CLAIMED_COLUMNS.join(', ')} from claimed d
     join webhook_subscriptions s on s.id = d.subscription_id
     join installations i on i.id = s.installation_id
     left join outbox_events o on o.id = d.event_id
     order by d.id`,
    bindings,
  );
}

/**
 * When a queue is next due after a claim: at its limit, when the leases just taken end (a recorded
 * attempt brings that forward, queues.ts); otherwise at its next due delivery, or, with leases out,
 * when they end at the latest (so that a dead worker's deliveries are taken over in time); never,
 * with nothing pending and nothing out. The PostgreSQL statement's `moved` says the same in SQL.
 */
function nextDueOf(held: number, cap: number, nextAttemptAt: number | undefined, leasesEnd: number): number | null {
  if (held >= cap) return leasesEnd;
  const times = [nextAttemptAt, held > 0 ? leasesEnd : undefined].filter((time): time is number => time !== undefined);
  return times.length > 0 ? Math.min(...times.map(Number)) : null;
}

interface DueQueue {
  subscription_id: string;
  subscription_state: string;
  installation_status: string;
}

async function claimOnSqlite(db: Db, limits: ClaimLimits, now: number, until: number, token: string): Promise<ClaimedRow[]> {
  const ids = await db.transaction(async (trx) => {
    const queues = await trx('webhook_queues as w')
      .join('webhook_subscriptions as s', 's.id', 'w.subscription_id')
      .join('installations as i', 'i.id', 's.installation_id')
      .where('w.next_due_at', '<=', now)
      .orderBy('w.next_due_at')
      .limit(limits.take)
      .select<DueQueue[]>('w.subscription_id', 's.state as subscription_state', 'i.status as installation_status');
    const taken: number[] = [];
    for (const queue of queues) {
      const [{ n: leased } = { n: 0 }] = await trx('webhook_deliveries')
        .where({ subscription_id: queue.subscription_id, state: 'pending' })
        .where('claimed_until', '>', now)
        .count<{ n: number }[]>({ n: '*' });
      const room = Math.min(limits.perSubscription - Number(leased), limits.take - taken.length);
      // SENDABLE, with the queue's subscription state and installation status known.
      const sendable = (rows: Knex.QueryBuilder) => {
        rows
          .from('webhook_deliveries as d')
          .where({ 'd.subscription_id': queue.subscription_id, 'd.state': 'pending' })
          .where((lease) => lease.whereNull('d.claimed_until').orWhere('d.claimed_until', '<=', now))
          .orderBy([{ column: 'd.next_attempt_at' }, { column: 'd.id' }]);
        if (queue.subscription_state === 'paused') rows.whereNot('d.kind', 'event');
        else if (queue.subscription_state !== 'active') rows.whereRaw('0 = 1');
        if (queue.installation_status !== 'installed') rows.where('d.event_type', 'app.uninstalled');
        return rows;
      };
      const mine =
        room > 0
          ? (await sendable(trx.queryBuilder()).where('d.next_attempt_at', '<=', now).limit(room).select<{ id: number }[]>('d.id')).map((row) => Number(row.id))
          : [];
      if (mine.length > 0) await trx('webhook_deliveries').whereIn('id', mine).update({ claimed_until: until, claim_token: token });
      taken.push(...mine);
      const held = Number(leased) + mine.length;
      const next =
        held >= limits.perSubscription ? undefined : await sendable(trx.queryBuilder()).first<{ next_attempt_at: number } | undefined>('d.next_attempt_at');
      const nextDueAt = nextDueOf(held, limits.perSubscription, next?.next_attempt_at, until);
      await trx('webhook_queues').where({ subscription_id: queue.subscription_id }).update({ next_due_at: nextDueAt });
      if (taken.length >= limits.take) break;
    }
    return taken;
  });
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
