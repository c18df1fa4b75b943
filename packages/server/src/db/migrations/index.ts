import type { Knex } from 'knex';
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

/** Every migration in order. Listed in code (not read from disk) so tsx, jest and builds agree. */
export const migrations: ReadonlyArray<{ name: string; migration: Knex.Migration }> = [
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
  { name: '018_store_keys', migration: storeKeys },
  { name: '019_partitions', migration: partitions },
  { name: '020_read_positions', migration: readPositions },
];
