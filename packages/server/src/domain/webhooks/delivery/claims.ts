import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { forEngine, type PerEngine } from '../../../db/engine';
import { fromJsonList } from '../../../db/json-lists';
import { selectRows } from '../../../db/reads';
import type { Db } from '../../../db/transactions';
import { inTransaction } from '../../../db/transactions';
import type { Deps } from '../../../services/container';
import type { SubscriptionRow } from '../subscriptions/row';

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
  /** The subscribing installation's scopes now: what of the event it may see (payloads.ts). */
  readonly receiverScopes: ReadonlySet<string>;
  /** The W3C trace of the request that caused the event, when one did (services/outbox). */
  readonly traceParent: string | null;
  readonly traceState: string | null;
  /** When the claim's lease ends (epoch ms): an attempt that could not end before it is not started. */
  readonly leaseEnd: number;
}

type ClaimedRow = SubscriptionRow & {
  delivery_id: number | string;
  delivery_created_at: number | string;
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
 * the next ones wait in the worker (jobs/held-deliveries.ts) and go out as soon as an answer frees a
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
 * end of the leases just taken (a recorded attempt brings it back at once: queues.ts). A subscription
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
  const rows = await forEngine(db, CLAIMS).claim(db, limits, now, until, token, delivered);
  return { deliveries: rows.map(claimedOf(token, until)), full: rows.length >= limits.take };
}

/**
 * Deliveries that succeeded, for the claim to record in its own statement (PostgreSQL): their
 * attempts (rows of `webhook_attempts`) and the deliveries with the claim that held them. Their
 * slots count as free in that same claim, which may take their successors at once: one round trip
 * between an answer and the next attempt of its subscription (attempts.ts, `recordAttempts`).
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

/** How a claim is made on one engine. */
interface Claiming {
  claim(db: Db, limits: ClaimLimits, now: number, until: number, token: string, delivered?: Delivered): Promise<readonly ClaimedRow[]>;
  /**
   * Whether the claim records deliveries that succeeded in its own statement (PostgreSQL): then a
   * batch that all succeeded goes with the next claim (attempts.ts). SQLite records them, and
   * claims, in one transaction instead: one commit serves both.
   */
  readonly recordsDelivered: boolean;
}

/** See {@link Claiming.recordsDelivered}. */
export const claimRecordsDeliveries = (db: Db): boolean => forEngine(db, CLAIMS).recordsDelivered;

/**
 * The queues of the deliveries a claim records as delivered, as the statement's `:freed_stores` and
 * `:freed_subscriptions` (their slots are free: due now, unless the claim takes them). A queue
 * another transaction holds is left to it: a fan-out or a recorded attempt makes it due anyway, and
 * a claim that counted these leases as held looks at it again in a moment ({@link HELD_ELSEWHERE_RECHECK_MS}).
 */
function freedQueues(delivered: Delivered): { freed_stores: string; freed_subscriptions: string } {
  const queues = [...new Map(delivered.deliveries.map((delivery) => [delivery.subscriptionId, delivery.storeId])).entries()];
  return {
    freed_stores: `{${queues.map(([, storeId]) => storeId).join(',')}}`,
    freed_subscriptions: `{${queues.map(([subscriptionId]) => subscriptionId).join(',')}}`,
  };
}

const FREED_QUEUES = 'select * from unnest(cast(:freed_stores as uuid[]), cast(:freed_subscriptions as uuid[]))';

async function claimOnPostgres(
  db: Db,
  limits: ClaimLimits,
  now: number,
  until: number,
  token: string,
  delivered: Delivered = { attempts: [], deliveries: [] },
): Promise<readonly ClaimedRow[]> {
  const bindings = {
    now,
    until,
    token,
    held_elsewhere_until: now + HELD_ELSEWHERE_RECHECK_MS,
    cap: limits.perSubscription,
    ahead: limits.perSubscription * LEASES_AHEAD,
    take: limits.take,
    attempts: JSON.stringify(delivered.attempts),
    // Arrays rather than JSON: PostgreSQL reads a handful of rows from them by primary key, where a
    // JSON record set (estimated at 100 rows) made it scan every delivery.
    delivered_stores: `{${delivered.deliveries.map((delivery) => delivery.storeId).join(',')}}`,
    delivered_ids: `{${delivered.deliveries.map((delivery) => delivery.id).join(',')}}`,
    delivered_times: `{${delivered.deliveries.map((delivery) => delivery.createdAt).join(',')}}`,
    delivered_tokens: `{${delivered.deliveries.map((delivery) => delivery.token).join(',')}}`,
    ...freedQueues(delivered),
  };
  // A hot statement (db/reads.ts), prepared once per connection: planning it costs more than
  // running it. It writes, and answers the rows its `returning` gives. The parameters are typed in
  // `params`: PostgreSQL cannot infer a parameter's type inside `case` and `coalesce`.
  // A row it locks or updates that another transaction changed since the statement began is
  // checked again by PostgreSQL (EvalPlanQual), which refuses to meet a data-modifying CTE there
  // ("ModifyTable should not be called during EvalPlanQual"): so the conditions of `due` and
  // `freed` name the delivered subscriptions' queues by parameters, never by `done`'s rows. It
  // waits for no queue row another transaction holds (`skip locked` in `due` and `freed`): one
  // that waited on a queue a fan-out held, while holding one the fan-out waited for, deadlocked.
  return selectRows<ClaimedRow>(
    db,
    `with params as (select cast(:now as bigint) as now, cast(:until as bigint) as until),
     recorded as (
       insert into webhook_attempts select * from json_populate_recordset(null::webhook_attempts, cast(:attempts as json))
     ),
     done as (
       update webhook_deliveries d set state = 'succeeded', attempts = d.attempts + 1, finished_at = :now, claimed_until = null
       from unnest(cast(:delivered_stores as uuid[]), cast(:delivered_ids as bigint[]), cast(:delivered_times as bigint[]), cast(:delivered_tokens as uuid[]))
         as mine(store_id, id, created_at, token)
       where d.store_id = mine.store_id and d.id = mine.id and d.created_at = mine.created_at and d.claim_token = mine.token
       returning d.id, d.subscription_id
     ),
     due as (
       select w.subscription_id, w.next_due_at, s.state as subscription_state, i.status as installation_status,
         s.state = 'active' and i.status = 'installed' as sends_all
       from webhook_queues w
       join webhook_subscriptions s on s.id = w.subscription_id
       join installations i on i.id = s.installation_id
       where w.next_due_at <= :now or (w.store_id, w.subscription_id) in (${FREED_QUEUES})
       order by w.next_due_at
       limit :take
       for update of w skip locked
     ),
     held as (
       select due.*, row_number() over (order by due.next_due_at) as turn, count(*) over () as queues, leases.mine, leases.others
       from due cross join lateral (
         select count(*) filter (where l.claim_token = :token) as mine, count(*) filter (where l.claim_token <> :token) as others
         from webhook_deliveries l
         where l.subscription_id = due.subscription_id and l.state = 'pending' and l.claimed_until > :now
           and l.id not in (select id from done)
       ) leases
     ),
     q as (
       select held.*, case when held.others > 0 then 0 else greatest(0, least(cast(:ahead as bigint) - held.mine, greatest(cast(:cap as bigint), cast(:take as bigint) / held.queues))) end as room
       from held
     ),
     picked as (
       select d.store_id, d.id, d.created_at, q.subscription_id from q
       cross join lateral (
         select d.store_id, d.id, d.created_at, d.next_attempt_at from webhook_deliveries d
         where d.subscription_id = q.subscription_id and d.state = 'pending' and d.next_attempt_at <= :now
           and (d.claimed_until is null or d.claimed_until <= :now) and ${SENDABLE}
         order by d.next_attempt_at, d.id
         limit q.room
         for update of d skip locked
       ) d
       order by q.turn, d.next_attempt_at, d.id
       limit :take
     ),
     claimed as (
       update webhook_deliveries d set claimed_until = :until, claim_token = :token
       from picked where d.store_id = picked.store_id and d.id = picked.id and d.created_at = picked.created_at
       returning d.id, d.created_at, d.subscription_id, d.event_id, d.event_type, d.event_occurred_at, d.attempts
     ),
     moved as (
       update webhook_queues w set next_due_at = case
         when q.others > 0 then least((select until from params), cast(:held_elsewhere_until as bigint))
         when q.mine + coalesce(taken.n, 0) >= :ahead then (select until from params)
         else least(
           (select d.next_attempt_at from webhook_deliveries d
            where d.subscription_id = q.subscription_id and d.state = 'pending'
              and (d.claimed_until is null or d.claimed_until <= :now) and ${SENDABLE}
              and d.id not in (select id from picked)
            order by d.next_attempt_at, d.id limit 1),
           case when q.mine + coalesce(taken.n, 0) > 0 then (select until from params) end)
         end
       from q left join (select subscription_id, count(*) as n from picked group by subscription_id) taken on taken.subscription_id = q.subscription_id
       where w.subscription_id = q.subscription_id
     ),
     freed as (
       update webhook_queues w set next_due_at = (select now from params)
       from (
         select f.store_id, f.subscription_id from webhook_queues f
         where (f.store_id, f.subscription_id) in (${FREED_QUEUES}) and f.subscription_id not in (select subscription_id from due)
           and (f.next_due_at is null or f.next_due_at > :now)
         for update of f skip locked
       ) free
       where w.store_id = free.store_id and w.subscription_id = free.subscription_id
     )
     select ${CLAIMED_COLUMNS.join(', ')} from claimed d
     join webhook_subscriptions s on s.id = d.subscription_id
     join installations i on i.id = s.installation_id
     left join outbox_events o on ${EVENT_OF_DELIVERY}
     order by d.id`,
    bindings,
  );
}

/**
 * When a queue is next due after a claim: held by another worker, in a moment
 * ({@link HELD_ELSEWHERE_RECHECK_MS}); at its limit, when the leases just taken end (a recorded
 * attempt brings that forward, queues.ts); otherwise at its next due
 * delivery, or, with leases out, when they end at the latest (so that a dead worker's deliveries
 * are taken over in time); never, with nothing pending and nothing out. The PostgreSQL statement's
 * `moved` says the same in SQL.
 */
function nextDueOf(heldElsewhere: boolean, full: boolean, holding: boolean, nextAttemptAt: number | undefined, now: number, leasesEnd: number): number | null {
  if (heldElsewhere) return Math.min(leasesEnd, now + HELD_ELSEWHERE_RECHECK_MS);
  if (full) return leasesEnd;
  const times = [nextAttemptAt, holding ? leasesEnd : undefined].filter((time): time is number => time !== undefined);
  return times.length > 0 ? Math.min(...times.map(Number)) : null;
}

interface DueQueue {
  subscription_id: string;
  subscription_state: string;
  installation_status: string;
}

async function claimOnSqlite(db: Db, limits: ClaimLimits, now: number, until: number, token: string, delivered?: Delivered): Promise<ClaimedRow[]> {
  if (delivered) throw new Error('Only PostgreSQL records deliveries in the claim (claimRecordsDeliveries)');
  const ids = await inTransaction(db, async (trx) => {
    const queues = await trx('webhook_queues as w')
      .join('webhook_subscriptions as s', 's.id', 'w.subscription_id')
      .join('installations as i', 'i.id', 's.installation_id')
      .where('w.next_due_at', '<=', now)
      .orderBy('w.next_due_at')
      .limit(limits.take)
      .select<DueQueue[]>('w.subscription_id', 's.state as subscription_state', 'i.status as installation_status');
    const taken: number[] = [];
    const ahead = limits.perSubscription * LEASES_AHEAD;
    const share = Math.max(limits.perSubscription, Math.floor(limits.take / Math.max(1, queues.length)));
    for (const queue of queues) {
      const holders = await trx('webhook_deliveries')
        .where({ subscription_id: queue.subscription_id, state: 'pending' })
        .where('claimed_until', '>', now)
        .groupBy('claim_token')
        .select<{ claim_token: string; n: number }[]>('claim_token', trx.raw('count(*) as n'));
      const mineHeld = Number(holders.find((holder) => holder.claim_token === token)?.n ?? 0);
      const othersHold = holders.some((holder) => holder.claim_token !== token);
      const room = othersHold ? 0 : Math.min(ahead - mineHeld, share, limits.take - taken.length);
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
      const picked =
        room > 0
          ? (await sendable(trx.queryBuilder()).where('d.next_attempt_at', '<=', now).limit(room).select<{ id: number }[]>('d.id')).map((row) => Number(row.id))
          : [];
      if (picked.length > 0) await trx('webhook_deliveries').whereIn('id', picked).update({ claimed_until: until, claim_token: token });
      taken.push(...picked);
      const held = mineHeld + picked.length;
      const full = othersHold || held >= ahead;
      const next = full ? undefined : await sendable(trx.queryBuilder()).first<{ next_attempt_at: number } | undefined>('d.next_attempt_at');
      const nextDueAt = nextDueOf(othersHold, full, held > 0, next?.next_attempt_at, now, until);
      await trx('webhook_queues').where({ subscription_id: queue.subscription_id }).update({ next_due_at: nextDueAt });
      if (taken.length >= limits.take) break;
    }
    return taken;
  });
  if (ids.length === 0) return [];
  return db('webhook_deliveries as d')
    .join('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .join('installations as i', 'i.id', 's.installation_id')
    .leftJoin('outbox_events as o', (join) => join.on(db.raw(EVENT_OF_DELIVERY)))
    .where('d.claim_token', token)
    .whereIn('d.id', ids)
    .orderBy('d.id')
    .select<ClaimedRow[]>(...CLAIMED_COLUMNS);
}

/**
 * A delivery's event by its whole key (store, id, time), not its id alone: the outbox is
 * partitioned by `occurred_at` (db/partitions.ts), and the delivery's copy of it takes the lookup
 * to one partition's key index instead of one probe per partition.
 */
const EVENT_OF_DELIVERY = 'o.store_id = s.store_id and o.id = d.event_id and o.occurred_at = d.event_occurred_at';

/** One statement on PostgreSQL, a few in one transaction on SQLite (the claim's doc above). */
const CLAIMS: PerEngine<Claiming> = {
  postgres: { claim: claimOnPostgres, recordsDelivered: true },
  sqlite: { claim: claimOnSqlite, recordsDelivered: false },
};

const CLAIMED_COLUMNS = [
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

const claimedOf =
  (token: string, leaseEnd: number) =>
  (row: ClaimedRow): ClaimedDelivery => {
    const { delivery_id, delivery_created_at, event_id, event_type, attempts, payload, receiver_scopes, trace_parent, trace_state, ...subscription } = row;
    return {
      id: Number(delivery_id),
      createdAt: Number(delivery_created_at),
      claimToken: token,
      eventId: event_id,
      eventType: event_type,
      attempts,
      payload,
      subscription: subscription as SubscriptionRow,
      receiverScopes: new Set(fromJsonList(receiver_scopes)),
      traceParent: trace_parent ?? null,
      traceState: trace_state ?? null,
      leaseEnd,
    };
  };
