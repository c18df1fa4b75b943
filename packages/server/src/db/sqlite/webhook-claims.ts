import type { Knex } from 'knex';
import { type Db, inTransaction } from '../transactions';
import { CLAIMED_COLUMNS, type ClaimedRow, type ClaimRequest, EVENT_OF_DELIVERY, HELD_ELSEWHERE_RECHECK_MS, LEASES_AHEAD } from '../webhook-claim-types';

/**
 * The webhook claim on SQLite: a few statements in one transaction (one writer), saying what the
 * PostgreSQL statement says (db/postgres/webhook-claims.ts; the claim's doc: delivery/claim.ts).
 */

/**
 * When a queue is next due after a claim: held by another worker, in a moment
 * ({@link HELD_ELSEWHERE_RECHECK_MS}); at its limit, when the leases just taken end (a recorded
 * attempt brings that forward, domain/webhooks/enqueue/queues.ts); otherwise at its next due
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

export async function claimOnSqlite<Subscription extends object>(
  db: Db,
  { limits, now, until, token, delivered }: ClaimRequest,
): Promise<ClaimedRow<Subscription>[]> {
  if (delivered) throw new Error('Only PostgreSQL records deliveries in the claim (claimRecordsDelivered)');
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
      // The PostgreSQL claim's SENDABLE, with the queue's subscription state and installation status known.
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
  const rows: unknown[] = await db('webhook_deliveries as d')
    .join('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .join('installations as i', 'i.id', 's.installation_id')
    .leftJoin('outbox_events as o', (join) => join.on(db.raw(EVENT_OF_DELIVERY)))
    .where('d.claim_token', token)
    .whereIn('d.id', ids)
    .orderBy('d.id')
    .select(...CLAIMED_COLUMNS);
  return rows as ClaimedRow<Subscription>[];
}
