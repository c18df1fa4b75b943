import { parseDateTimeFilter } from '../../../core/instants';
import { lockingRows } from '../../../db/locks';
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

/** The filters of `webhooks.list`, as the request gives them. */
export interface SubscriptionFilters {
  /** Only subscriptions with `updated_at` after this instant (RFC 3339); a filter only: the list stays by creation. */
  updated_since?: string | undefined;
}

/**
 * Every subscription of the installation, revoked ones included, by creation (unpaged: an app has
 * few); with `updated_since`, only those changed after it (400 INVALID_FILTER for a value that is no
 * instant).
 */
export function listSubscriptions(db: Db, owner: SubscriptionOwner, filters: SubscriptionFilters = {}): Promise<SubscriptionRow[]> {
  const updatedAfter = filters.updated_since === undefined ? undefined : parseDateTimeFilter('updated_since', filters.updated_since);
  const query = db<SubscriptionRow>('webhook_subscriptions').where({ store_id: owner.storeId, installation_id: owner.installationId });
  if (updatedAfter !== undefined) query.andWhere('updated_at', '>', updatedAfter);
  return query.orderBy([{ column: 'created_at' }, { column: 'id' }]);
}
