import type { Db } from '../../../db/transactions';

/**
 * Each subscription's queue (`webhook_queues`): when its next delivery may be claimed. Whatever
 * makes a delivery claimable says so here, in the transaction that does it: new deliveries (fan-out,
 * replay, recover), a slot coming free (an attempt recorded), a paused subscription resumed. A claim
 * then moves the time on to the queue's next due delivery, or to the end of the leases it took when
 * the subscription is at its limit (delivery/claim.ts). Saying "due now" too often costs a claim one look
 * at a queue with nothing to take; saying it too rarely would strand deliveries, so housekeeping
 * (every 10 minutes) repairs a queue that was never told (`repairWebhookQueues`).
 */
export interface QueueDue {
  readonly subscriptionId: string;
  readonly storeId: string;
}

/** Rows per statement (SQLite binds at most 32,766 values; three a row). */
const CHUNK = 500;

/** Queues in the order every writer locks them: two that locked the same queues in other orders could each wait for the other. */
const lockOrder = (a: QueueDue, b: QueueDue): number =>
  a.storeId < b.storeId ? -1 : a.storeId > b.storeId ? 1 : a.subscriptionId < b.subscriptionId ? -1 : a.subscriptionId > b.subscriptionId ? 1 : 0;

/** The queues of `queues` are due at `at` at the latest (a queue due earlier stays so). */
export async function queueDue(db: Db, queues: readonly QueueDue[], at: number): Promise<void> {
  const unique = [...new Map(queues.map((queue) => [queue.subscriptionId, queue])).values()].sort(lockOrder);
  for (let start = 0; start < unique.length; start += CHUNK) {
    await db('webhook_queues')
      .insert(unique.slice(start, start + CHUNK).map((queue) => ({ subscription_id: queue.subscriptionId, store_id: queue.storeId, next_due_at: at })))
      .onConflict(['store_id', 'subscription_id'])
      .merge({
        next_due_at: db.raw(
          'case when webhook_queues.next_due_at is null or webhook_queues.next_due_at > excluded.next_due_at then excluded.next_due_at else webhook_queues.next_due_at end',
        ),
      });
  }
}

/**
 * The safety net: a queue with pending deliveries that no claim will look at (never told, or told
 * of a time later than its oldest pending delivery) is made due at that delivery's time. What it
 * catches: a reinstalled app's deliveries, which were not claimable while it was uninstalled.
 * Answers how many queues it moved.
 */
export async function repairWebhookQueues(db: Db, now: number): Promise<number> {
  const stranded = await db('webhook_deliveries as d')
    .join('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .leftJoin('webhook_queues as q', 'q.subscription_id', 'd.subscription_id')
    .where('d.state', 'pending')
    .groupBy('d.subscription_id', 's.store_id', 'q.next_due_at')
    .havingRaw('q.next_due_at is null or q.next_due_at > min(d.next_attempt_at)')
    .select<{ subscription_id: string; store_id: string; due: number | string }[]>('d.subscription_id', 's.store_id', db.raw('min(d.next_attempt_at) as due'));
  for (const row of stranded) {
    await queueDue(db, [{ subscriptionId: row.subscription_id, storeId: row.store_id }], Math.min(Number(row.due), now));
  }
  return stranded.length;
}
