import { type Db, insertedId } from '../../../db/transactions';
import type { Actor } from '../../common/actor';
import { findCustomer } from './queries';
import type { CustomerRow } from './row';

export interface CustomerSignUp {
  name: string;
  email?: string | null;
  mobile?: string | null;
}

/** A shopper signs up in the store (no event: the interface names none for customers). */
export async function createCustomer(db: Db, actor: Actor, signUp: CustomerSignUp): Promise<CustomerRow> {
  const returned = await db('customers')
    .insert({ store_id: actor.storeId, name: signUp.name, email: signUp.email ?? null, mobile: signUp.mobile ?? null, created_at: actor.now })
    .returning('id');
  const created = await findCustomer(db, actor.storeId, insertedId(returned));
  if (!created) throw new Error('The customer is missing right after its insert');
  return created;
}
