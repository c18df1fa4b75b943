import { lockingRows } from '../../../db/dialect';
import type { Db } from '../../../db/transactions';
import { type SubscriptionRow, subscriptionNotFound } from './row';

/** Who owns subscriptions: one installation of one store. */
export interface SubscriptionOwner {
  readonly storeId: string;
  readonly installationId: string;
}

/** The owner's subscription, locked for a change until the transaction ends (SQLite has one writer); 404 otherwise. */
export async function lockSubscription(db: Db, owner: SubscriptionOwner, id: string): Promise<SubscriptionRow> {
  const query = db<SubscriptionRow>('webhook_subscriptions').where({ id, store_id: owner.storeId, installation_id: owner.installationId });
  const row = await lockingRows(db, query).first();
  if (!row) throw subscriptionNotFound();
  return row;
}

/** Every subscription of the installation, revoked ones included, by creation (unpaged: an app has few). */
export function listSubscriptions(db: Db, owner: SubscriptionOwner): Promise<SubscriptionRow[]> {
  return db<SubscriptionRow>('webhook_subscriptions')
    .where({ store_id: owner.storeId, installation_id: owner.installationId })
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
}
