/**
 * Every table of the schema, classified for sharding by store (docs/scaling.md "Sharding by store",
 * docs/decisions/0079-keys-led-by-the-store.md). test/db/table-classes.test.ts holds the schema to it:
 * a table not listed here fails it, and so does a store table whose key does not lead with `store_id`.
 *
 * - `store`: a store's API data. Carries `store_id`; its primary key, every unique index and every
 *   reference to another store table lead with it; every statement of the store API names it. On
 *   Citus: distributed by `store_id`, all co-located. With independent databases: in the store's.
 * - `reference`: small platform data that store tables refer to or store statements join (the bearer
 *   check). On Citus: a reference table, copied to every node. Independently: in every database,
 *   written through the platform database.
 * - `routing`: a store's platform rows that arrive by a key without the store (a token's hash, a code,
 *   a request id): the row names its store, and is what routes the request. On Citus: on the
 *   coordinator. Independently: in the platform database, beside the store directory.
 * - `coordinator`: platform state that belongs to no store (owners, sessions, server secrets,
 *   migrations). On Citus: on the coordinator. Independently: in the platform database.
 */
export type TableClass = 'store' | 'reference' | 'routing' | 'coordinator';

export interface ClassifiedTable {
  readonly kind: TableClass;
  /** Why, in one line. */
  readonly reason: string;
}

export const TABLE_CLASSES: Readonly<Record<string, ClassifiedTable>> = {
  // The store API's data.
  categories: { kind: 'store', reason: 'the catalog' },
  products: { kind: 'store', reason: 'the catalog' },
  inventory_adjustments: { kind: 'store', reason: 'the catalog: stock changes' },
  digital_units: { kind: 'store', reason: 'the catalog: codes of digital products' },
  customers: { kind: 'store', reason: 'the storefront' },
  coupons: { kind: 'store', reason: 'the storefront' },
  orders: { kind: 'store', reason: 'the storefront' },
  order_items: { kind: 'store', reason: 'the storefront: lines of an order' },
  payments: { kind: 'store', reason: 'the storefront' },
  abandoned_carts: { kind: 'store', reason: 'the storefront' },
  abandoned_cart_items: { kind: 'store', reason: 'the storefront: lines of a cart' },
  reviews: { kind: 'store', reason: 'the storefront' },
  daily_sales: { kind: 'store', reason: 'the rollups the analytics read' },
  daily_customer_sales: { kind: 'store', reason: 'the rollups the analytics read' },
  daily_product_sales: { kind: 'store', reason: 'the rollups the analytics read' },
  daily_category_sales: { kind: 'store', reason: 'the rollups the analytics read' },
  store_rollup_versions: { kind: 'store', reason: "the version of a store's rollups: one row per store" },
  pages: { kind: 'store', reason: 'content' },
  webhook_subscriptions: { kind: 'store', reason: "webhooks: an installation's subscriptions in its store" },
  webhook_deliveries: { kind: 'store', reason: 'webhooks: what is owed, per event and subscription' },
  webhook_queues: { kind: 'store', reason: "webhooks: each subscription's next due delivery" },
  webhook_attempts: { kind: 'store', reason: 'webhooks: every attempt made (partitioned by day, 0080)' },
  outbox_events: { kind: 'store', reason: "a store's events: the feed and the fan-out's source (partitioned by day, 0080)" },
  idempotency_keys: { kind: 'store', reason: "the first answers to an installation's keyed POSTs (partitioned by day, 0080)" },
  replica_read_positions: {
    kind: 'store',
    reason: "read-your-writes on replicas: where an installation's last write ended in the primary's WAL (unlogged: on each shard's own primary)",
  },

  // Small platform data store tables refer to and store statements join.
  stores: { kind: 'reference', reason: 'every store table refers to its store; the bearer check reads its routing state' },
  apps: { kind: 'reference', reason: 'read with every installation (its version pin, its auth epoch); few rows, rarely written' },
  app_versions: { kind: 'reference', reason: "an installation's version: its scopes and URLs; written when an app publishes" },
  installations: { kind: 'reference', reason: 'webhook subscriptions and version usage refer to it; the bearer check joins it' },

  // A store's platform rows, found by a key that carries no store: the row routes the request.
  tokens: { kind: 'routing', reason: 'a bearer or refresh token arrives alone: its hash finds the row, which names the store' },
  grants: { kind: 'routing', reason: "reached from a token or a code's exchange, by id, never by store" },
  authorization_codes: { kind: 'routing', reason: 'the token endpoint gets the code alone: its hash finds the row and its store' },
  token_operations: { kind: 'routing', reason: "a token request's coalescing, by (app, request hash): the store is known only after" },
  launch_tokens: { kind: 'routing', reason: 'the launch verification gets the token alone: its hash finds the row and its store' },
  authorization_requests: { kind: 'routing', reason: "the consent form posts the request's id alone" },

  // Platform state that belongs to no store.
  store_owners: { kind: 'coordinator', reason: 'an owner signs in by email before any store is chosen' },
  dashboard_sessions: { kind: 'coordinator', reason: "an owner's session, by its hash" },
  client_secrets: { kind: 'coordinator', reason: "an app's secrets: the token endpoint checks them by client, before any store" },
  sign_in_limits: { kind: 'coordinator', reason: "the dashboard's sign-in counters, by email and address" },
  service_keys: { kind: 'coordinator', reason: 'the server secrets every instance shares' },
  sealing_key_check: { kind: 'coordinator', reason: 'one row: the check of the sealing key at start' },
  api_quota_counters: {
    kind: 'coordinator',
    reason: "the quotas: spent in the bearer check's statement beside the token (a routing table), keyed by installation or OAuth client, not by store",
  },
  api_version_usage: { kind: 'coordinator', reason: "which installation called under which date version: the operator's record, written once a day per pair" },
  knex_migrations: { kind: 'coordinator', reason: 'the migrations applied (knex)' },
  knex_migrations_lock: { kind: 'coordinator', reason: "knex's migration lock" },
  svc_migrations: { kind: 'coordinator', reason: 'the migrations after 017 applied, expand phase (db/migrate.ts)' },
  svc_migrations_lock: { kind: 'coordinator', reason: "knex's migration lock of the expand phase" },
  svc_migrations_contract: { kind: 'coordinator', reason: 'the contract phases applied (db/migrate.ts)' },
  svc_migrations_contract_lock: { kind: 'coordinator', reason: "knex's migration lock of the contract phase" },
};

/** The store tables: what a statement of the store API must name `store_id` for. */
export const STORE_TABLES: ReadonlySet<string> = new Set(
  Object.entries(TABLE_CLASSES)
    .filter(([, table]) => table.kind === 'store')
    .map(([name]) => name),
);
