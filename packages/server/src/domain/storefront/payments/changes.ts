import type { Knex } from 'knex';
import { invalidBodyField } from '../../../core/errors';
import { insertedId } from '../../../db/transactions';
import type { Actor } from '../../common/actor';
import type { OrderRow } from '../orders/row';
import type { PaymentCard, PaymentMethod, PaymentRow } from './row';

/** How the shopper pays: a card method names its card, the others none. */
export interface PaymentAttempt {
  method: PaymentMethod;
  card?: PaymentCard | null;
}

/** The methods that take a card (the others are `stc_pay`, `bank_transfer`, `cod`). */
const CARD_METHODS: ReadonlySet<PaymentMethod> = new Set(['mada', 'credit_card', 'apple_pay']);

const LAST4 = /^[0-9]{4}$/;

function checkAttempt({ method, card }: PaymentAttempt): void {
  const invalid = (message: string) => invalidBodyField('/card', message);
  if (!CARD_METHODS.has(method)) {
    if (card) throw invalid(`${method} takes no card`);
    return;
  }
  if (!card) throw invalid(`${method} needs the card used`);
  if (!LAST4.test(card.last4)) throw invalid('last4 is four digits');
}

/** Records an attempt to pay the whole of the order's total, in the order's transaction. */
export async function recordPayment(
  trx: Knex.Transaction,
  actor: Actor,
  order: OrderRow,
  attempt: PaymentAttempt,
  status: 'paid' | 'failed',
): Promise<PaymentRow> {
  checkAttempt(attempt);
  const row = {
    store_id: actor.storeId,
    order_id: order.id,
    method: attempt.method,
    status,
    amount_halalas: Number(order.total_halalas),
    card_brand: attempt.card?.brand ?? null,
    card_last4: attempt.card?.last4 ?? null,
    created_at: actor.now,
    updated_at: actor.now,
  };
  const id = insertedId(await trx('payments').insert(row).returning('id'));
  return { id, ...row };
}

/** A refunded order's taken payment becomes `refunded` (the whole amount: no partial refunds). */
export async function refundPayments(trx: Knex.Transaction, actor: Actor, orderId: number): Promise<void> {
  await trx('payments').where({ store_id: actor.storeId, order_id: orderId, status: 'paid' }).update({ status: 'refunded', updated_at: actor.now });
}
