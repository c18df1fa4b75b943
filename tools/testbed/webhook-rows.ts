import { randomUUID } from 'node:crypto';
import type { createDatabase } from '../../packages/server/src/db/connection';

/** The server's Knex (tools reach knex through the server, as tools/bench/fixtures.ts does). */
type Knex = ReturnType<typeof createDatabase>;

/**
 * A webhook subscription's row as the schema holds it, for tests and benches that write rows
 * straight to the tables (a migration's before and after, a bench's simulated days) rather than
 * through the API.
 */
export const subscriptionRow = (row: { id: string; storeId: string; installationId: string; now: number }) => ({
  id: row.id,
  store_id: row.storeId,
  installation_id: row.installationId,
  endpoint_url: 'https://example.com/hooks',
  event_types: '[]',
  payload_version: 1,
  state: 'active',
  secret_generation: 1,
  secret_sealed: 'x',
  issued_scopes: '[]',
  created_at: row.now,
  updated_at: row.now,
});

/**
 * An app installed in the store with a webhook subscription, written straight to the tables (the
 * columns every schema since 017 has): what a migration's or a bench's deliveries and attempts hang on.
 */
export async function subscribedInstallation(
  db: Knex,
  storeId: string,
  now: number,
  ids: { installationId?: string } = {},
): Promise<{ appId: string; installationId: string; subscriptionId: string }> {
  const appId = randomUUID();
  const versionId = randomUUID();
  const installationId = ids.installationId ?? randomUUID();
  const subscriptionId = randomUUID();
  await db('apps').insert({ id: appId, name: 'Webhook rows', created_at: now });
  await db('app_versions').insert({
    id: versionId,
    app_id: appId,
    number: 1,
    redirect_urls: '[]',
    launch_url: 'https://example.com/launch',
    required_scopes: '[]',
    optional_scopes: '[]',
    created_at: now,
  });
  await db('installations').insert({
    id: installationId,
    store_id: storeId,
    app_id: appId,
    version_id: versionId,
    granted_scopes: '[]',
    status: 'installed',
    installed_at: now,
  });
  await db('webhook_subscriptions').insert(subscriptionRow({ id: subscriptionId, storeId, installationId, now }));
  return { appId, installationId, subscriptionId };
}
