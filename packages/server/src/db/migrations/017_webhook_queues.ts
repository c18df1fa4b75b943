import type { Knex } from 'knex';

const QUEUE_DUE_INDEX = 'webhook_queues_due_index';
const SUBSCRIPTION_DUE_INDEX = 'webhook_deliveries_subscription_due_index';
const LEASE_INDEX = 'webhook_deliveries_lease_index';
/** The order of the claim before queues (012): every due delivery, whatever its subscription. */
const GLOBAL_DUE_INDEX = 'webhook_deliveries_due_index';

/**
 * Each subscription's queue of deliveries: when its next delivery may be claimed (`next_due_at`;
 * null when nothing is owed). A claim reads the queues that are due, in the order they came due, and
 * takes each one's oldest due deliveries through `(subscription_id, state, next_attempt_at, id)`,
 * so its work follows what it takes, never the backlog behind it: a subscription at its limit of
 * attempts at once is not walked past, delivery by delivery, on every claim
 * (docs/decisions/0070-webhook-queues.md). A claim counts a queue's live leases through
 * `(subscription_id, claimed_until)` over the pending deliveries under a lease (or a lapsed one): a
 * few rows, where the due index would walk the subscription's whole backlog to find them. Filled
 * from the deliveries already pending.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_queues', (t) => {
    t.uuid('subscription_id').primary().references('id').inTable('webhook_subscriptions');
    t.uuid('store_id').notNullable();
    t.bigInteger('next_due_at');
    t.index(['next_due_at'], QUEUE_DUE_INDEX, { predicate: knex.whereNotNull('next_due_at') });
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['subscription_id', 'state', 'next_attempt_at', 'id'], SUBSCRIPTION_DUE_INDEX);
    t.index(['subscription_id', 'claimed_until'], LEASE_INDEX, { predicate: knex.whereRaw("state = 'pending' and claimed_until is not null") });
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropIndex(['state', 'next_attempt_at', 'id'], GLOBAL_DUE_INDEX);
  });
  await knex.raw(
    `insert into webhook_queues (subscription_id, store_id, next_due_at)
     select d.subscription_id, s.store_id, min(d.next_attempt_at)
     from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id
     where d.state = 'pending'
     group by d.subscription_id, s.store_id`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['state', 'next_attempt_at', 'id'], GLOBAL_DUE_INDEX);
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropIndex(['subscription_id', 'claimed_until'], LEASE_INDEX);
    t.dropIndex(['subscription_id', 'state', 'next_attempt_at', 'id'], SUBSCRIPTION_DUE_INDEX);
  });
  await knex.schema.dropTable('webhook_queues');
}
