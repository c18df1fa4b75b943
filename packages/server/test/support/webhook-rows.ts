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
