import { selectRows } from '../reads';
import type { Db } from '../transactions';
import {
  CLAIMED_COLUMNS,
  type ClaimedRow,
  type ClaimRequest,
  type Delivered,
  EVENT_OF_DELIVERY,
  HELD_ELSEWHERE_RECHECK_MS,
  LEASES_AHEAD,
} from '../webhook-claim-types';

/**
 * The webhook claim on PostgreSQL: one statement (the claim's doc: delivery/claim.ts). The queues
 * and deliveries taken are locked `FOR UPDATE SKIP LOCKED`, so concurrent workers take disjoint
 * sets; deliveries that succeeded are recorded by the same statement (`delivered`).
 */

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

const NOTHING_DELIVERED: Delivered = { attempts: [], deliveries: [] };

const FREED_QUEUES = 'select * from unnest(cast(:freed_stores as uuid[]), cast(:freed_subscriptions as uuid[]))';

export async function claimOnPostgres<Subscription extends object>(
  db: Db,
  { limits, now, until, token, delivered = NOTHING_DELIVERED }: ClaimRequest,
): Promise<readonly ClaimedRow<Subscription>[]> {
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
  return selectRows<ClaimedRow<Subscription>>(
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
