import { engineOfHandle } from './engine';
import type { Db } from './transactions';

export type { ListenOptions, StopListening } from './engine';
export { LISTENER_NAME, WEBHOOK_WORK_CHANNEL } from './postgres/notifications';

/**
 * Webhook work announced by the commit that made it, so that dispatchers start on it at once
 * instead of at their next poll (docs/decisions/0056-dispatchers-woken-by-commits.md). On
 * PostgreSQL every listening process hears it (db/postgres/notifications.ts); SQLite has no such
 * thing: the dispatchers of the writing process are told after the commit, and another process's
 * writes (the CLI) are found by the poll, which stays the fallback on both (db/sqlite/notifications.ts).
 */

/*
 * Listening is the engine's `webhookWork.listen`: it calls `onWork` whenever a commit announced
 * webhook work, from any process on PostgreSQL, from this one on SQLite; and once each time the
 * listening connection is (re)opened, since what was committed while it was away was not heard.
 */

/**
 * Announces that `db`'s writes leave webhook work (outbox events, deliveries) for dispatchers. Call
 * it in the transaction that writes them: listeners hear of it once that commits, never before
 * (they would look before the rows are visible) and never after a rollback.
 */
export const announceWebhookWork = (db: Db): Promise<void> => engineOfHandle(db).webhookWork.announce(db);
