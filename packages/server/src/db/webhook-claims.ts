import { engineOfHandle } from './engine';
import type { Db } from './transactions';
import type { ClaimedRow, ClaimRequest } from './webhook-claim-types';

export type { ClaimedRow, ClaimLimits, ClaimRequest, Delivered } from './webhook-claim-types';
export { HELD_ELSEWHERE_RECHECK_MS, LEASES_AHEAD } from './webhook-claim-types';

/** Claims due webhook deliveries on the engine `db` runs on (delivery/claim.ts says what a claim takes). */
export const claimWebhookDeliveries = <Subscription extends object>(db: Db, request: ClaimRequest): Promise<readonly ClaimedRow<Subscription>[]> =>
  engineOfHandle(db).webhookWork.claim<Subscription>(db, request);

/** Whether the claim of `db`'s engine records deliveries that succeeded in its own statement (PostgreSQL). */
export const claimRecordsDelivered = (db: Db): boolean => engineOfHandle(db).webhookWork.claimRecordsDelivered;
