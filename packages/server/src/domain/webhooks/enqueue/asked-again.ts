import type { Knex } from 'knex';
import { announceWebhookWork } from '../../../db/notifications';
import { type SqlValue, selectRows } from '../../../db/reads';
import type { SubscriptionRow } from '../subscriptions/row';
import { queueDue } from './queues';

/** An instant as webhooks.replay and webhooks.recover echo it: UTC, to the second (milliseconds only when there are any). */
export const echoedInstant = (instant: number): string => new Date(instant).toISOString().replace('.000Z', 'Z');

/**
 * Queues again, as pending deliveries of `kind` to one subscription, due now, the events that
 * `events` selects (columns `event_id`, `event_type`, `event_occurred_at`): what webhooks.replay and
 * webhooks.recover share. Each delivery keeps its event's id and body (the delivery reads them from
 * the outbox). The subscription's queue is due and the dispatchers are told. Answers how many were
 * queued.
 *
 * One statement, so what is queued is what the select found. PostgreSQL counts it with `returning`
 * (a row changing meanwhile is queued and counted, or neither); SQLite, whose writing transaction
 * holds its one write lock, counts the same rows before (knex drops `returning` from an insert of
 * a select there).
 */
export async function queueAskedAgain(
  trx: Knex.Transaction,
  subscription: Pick<SubscriptionRow, 'id' | 'store_id'>,
  events: Knex.QueryBuilder,
  kind: 'replay' | 'recover',
  now: number,
): Promise<number> {
  const insert = trx
    .into(
      trx.raw('?? (??, ??, ??, ??, ??, ??, ??, ??, ??, ??)', [
        'webhook_deliveries',
        'store_id',
        'subscription_id',
        'event_id',
        'event_type',
        'event_occurred_at',
        'kind',
        'state',
        'attempts',
        'next_attempt_at',
        'created_at',
      ]),
    )
    .insert(
      trx
        .from(events.clone().as('e'))
        .select(
          trx.raw('? as store_id', [subscription.store_id]),
          trx.raw('? as subscription_id', [subscription.id]),
          'e.event_id',
          'e.event_type',
          'e.event_occurred_at',
          trx.raw('? as kind', [kind]),
          trx.raw("'pending' as state"),
          trx.raw('0 as attempts'),
          trx.raw('? as next_attempt_at', [now]),
          trx.raw('? as created_at', [now]),
        ),
    );
  // knex leaves `returning` out of an insert … select on SQLite: the clause is added to its SQL.
  const { sql, bindings } = insert.toSQL();
  const queued = (await selectRows<{ id: number }>(trx, `${sql} returning id`, bindings as SqlValue[])).length;
  if (queued > 0) {
    await queueDue(trx, [{ subscriptionId: subscription.id, storeId: subscription.store_id }], now);
    await announceWebhookWork(trx);
  }
  return queued;
}
