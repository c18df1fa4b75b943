import * as platform from './001_platform';
import * as oauthState from './002_oauth_state';
import * as storeApi from './003_store_api';
import * as catalog from './004_catalog';
import * as signInLimits from './005_sign_in_limits';
import * as storefront from './006_storefront';
import * as pages from './007_pages';
import * as webhooks from './008_webhooks';
import * as rollupVersions from './009_rollup_versions';
import * as sealingKeyCheck from './010_sealing_key_check';
import * as apiVersions from './011_api_versions';
import * as deliveryClaimOrder from './012_delivery_claim_order';
import * as apiQuotaCounters from './013_api_quota_counters';
import * as eventTrace from './014_event_trace';
import * as eventFeed from './015_event_feed';
import * as syncIndexes from './016_sync_indexes';
import * as webhookQueues from './017_webhook_queues';
import * as storeKeys from './018_store_keys';
import * as partitions from './019_partitions';
import * as readPositions from './020_read_positions';
import * as deliveryPartitions from './021_delivery_partitions';
import type { PhaseMigration } from './phase';

export type { PhaseMigration } from './phase';

/**
 * A migration: its expand phase (`migration`), and the contract phase of one that removes what the
 * previous release still uses (`contract`, run apart: db/migrate.ts).
 */
export interface MigrationEntry {
  readonly name: string;
  readonly migration: PhaseMigration;
  readonly contract?: PhaseMigration;
}

/**
 * Every migration in order. Listed in code (not read from disk) so tsx, jest and builds agree.
 *
 * Adding one (docs/decisions/0081-migrations-run-again.md, 0082-expand-then-contract.md;
 * docs/development.md "Adding a migration"):
 * - Re-entrant: cut at any statement (a timeout, a lost session, a killed process), the next run
 *   completes it from what it finds: `if not exists`, a check before each step, an INVALID index
 *   dropped and built again. SQLite runs a migration in one transaction; one outside a transaction
 *   (`config.transaction = false`) wraps its SQLite part in one.
 * - Expand now, contract in a later release: nothing the previous release reads or writes is
 *   removed, renamed, re-keyed or made NOT NULL (without a default or a filler) by the expand
 *   phase; that goes in `contract`, which runs after the rollout (`svc migrate --contract`).
 *   The previous release's test (test/db/previous-release.test.ts) runs its code on the new schema.
 * - No constraint whose meaning depends on the day of the run outlives the run.
 * - Long DDL on a large table (a backfill, a validation, an index) runs on a session of its own
 *   with a lock timeout and retries for its short steps (db/postgres/online-ddl.ts), never through
 *   the pool's statement_timeout; test/db/migration-failures.test.ts cuts each of its steps.
 */
export const migrations: readonly MigrationEntry[] = [
  { name: '001_platform', migration: platform },
  { name: '002_oauth_state', migration: oauthState },
  { name: '003_store_api', migration: storeApi },
  { name: '004_catalog', migration: catalog },
  { name: '005_sign_in_limits', migration: signInLimits },
  { name: '006_storefront', migration: storefront },
  { name: '007_pages', migration: pages },
  { name: '008_webhooks', migration: webhooks },
  { name: '009_rollup_versions', migration: rollupVersions },
  { name: '010_sealing_key_check', migration: sealingKeyCheck },
  { name: '011_api_versions', migration: apiVersions },
  { name: '012_delivery_claim_order', migration: deliveryClaimOrder },
  { name: '013_api_quota_counters', migration: apiQuotaCounters },
  { name: '014_event_trace', migration: eventTrace },
  { name: '015_event_feed', migration: eventFeed },
  { name: '016_sync_indexes', migration: syncIndexes },
  { name: '017_webhook_queues', migration: webhookQueues },
  { name: '018_store_keys', migration: storeKeys, contract: storeKeys.contract },
  { name: '019_partitions', migration: partitions, contract: partitions.contract },
  { name: '020_read_positions', migration: readPositions },
  { name: '021_delivery_partitions', migration: deliveryPartitions },
];
