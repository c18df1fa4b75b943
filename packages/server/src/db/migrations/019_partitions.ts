import type { Knex } from 'knex';
import { forEngine } from '../engine';
import { type DayPartitioning, fillerOf, fillStoreId, partitionByDay, unpartition } from '../postgres/day-partitioning';
import { DdlSession } from '../postgres/online-ddl';
import type { PhaseMigration } from './phase';

/**
 * The high-churn tables in partitions by day on PostgreSQL (docs/decisions/0080-partitions-by-time.md),
 * with `store_id` leading their keys (sharding by store), made without copying a row and without
 * stopping writes for more than a moment (db/postgres/day-partitioning.ts):
 *
 * - `outbox_events` by `occurred_at`, key `(store_id, id, occurred_at)`;
 * - `webhook_attempts` by `attempted_at`, key `(store_id, id, attempted_at)`, `store_id` added and
 *   filled from the subscription;
 * - `idempotency_keys` by `expires_at`, key `(store_id, id, expires_at)`, `store_id` added and
 *   filled from the installation. Its unique `(installation_id, operation_id, idempotency_key)`
 *   cannot hold across partitions: an index takes its place, and a claim serialises on the key
 *   (http/idempotency.ts).
 *
 * Re-entrant (docs/decisions/0081-migrations-run-again.md): a run cut at any statement is completed
 * by the next. Expand, then contract (0082-expand-then-contract.md): the previous release names the
 * idempotency key's unique index in its `ON CONFLICT`, so the expand phase only adds and fills
 * `idempotency_keys.store_id` (a trigger fills it for the previous release's inserts), and the
 * table's conversion, which drops that index, is this migration's contract phase, run once no
 * instance of the previous release is left (`svc migrate --contract`).
 *
 * SQLite keeps plain tables: it gains the `store_id` columns, and (contract) the idempotency key's
 * unique index becomes a plain one, since the claim is what keeps a key to one live row on both.
 * Each of its phases runs in one transaction, so a cut one leaves nothing behind.
 */

/** Not in one transaction: concurrent index builds cannot run in one, and each step commits on its own. */
export const config = { transaction: false };

const STORE_OF_INSTALLATION = { table: 'installations', via: 'installation_id' } as const;
const KEY_UNIQUE = 'idempotency_keys_installation_id_operation_id_idempotency_key_unique';
const KEY_INDEX = 'idempotency_keys_key_index';
const KEY_COLUMNS = ['installation_id', 'operation_id', 'idempotency_key'] as const;

const EXPANDED: readonly DayPartitioning[] = [
  { table: 'outbox_events', column: 'occurred_at' },
  { table: 'webhook_attempts', column: 'attempted_at', storeFrom: { table: 'webhook_subscriptions', via: 'subscription_id' } },
];

const IDEMPOTENCY_KEYS: DayPartitioning = {
  table: 'idempotency_keys',
  column: 'expires_at',
  storeFrom: STORE_OF_INSTALLATION,
  dropped: [KEY_UNIQUE],
  built: [{ name: KEY_INDEX, columns: KEY_COLUMNS }],
};

export async function up(knex: Knex): Promise<void> {
  await forEngine(knex, { postgres: expandOnPostgres, sqlite: expandOnSqlite })(knex);
}

export async function down(knex: Knex): Promise<void> {
  await forEngine(knex, { postgres: unexpandOnPostgres, sqlite: unexpandOnSqlite })(knex);
}

/** The phase that removes what the previous release needs (migrate.ts runs it apart). */
export const contract: PhaseMigration = {
  config: { transaction: false },
  up: (knex) => forEngine(knex, { postgres: contractOnPostgres, sqlite: contractOnSqlite })(knex),
  down: (knex) => forEngine(knex, { postgres: uncontractOnPostgres, sqlite: uncontractOnSqlite })(knex),
};

async function expandOnPostgres(knex: Knex): Promise<void> {
  for (const conversion of EXPANDED) await partitionByDay(knex, conversion);
  // idempotency_keys: store_id only, the table left plain.
  const session = DdlSession.open(knex, IDEMPOTENCY_KEYS.table);
  try {
    await fillStoreId(session, IDEMPOTENCY_KEYS.table, STORE_OF_INSTALLATION);
  } finally {
    await session.close();
  }
}

/** The conversion, completed from whatever the expand phase (of this release or an earlier one) left. */
const contractOnPostgres = (knex: Knex) => partitionByDay(knex, IDEMPOTENCY_KEYS);

async function uncontractOnPostgres(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await unpartition(trx, { ...IDEMPOTENCY_KEYS, keyBefore: ['id'] }, async (plain) => {
      await plain.raw(`alter table idempotency_keys add constraint ?? unique (${KEY_COLUMNS.join(', ')})`, [KEY_UNIQUE]);
    });
    await trx.raw('drop index if exists ??', [KEY_INDEX]);
  });
}

async function unexpandOnPostgres(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    for (const conversion of [...EXPANDED].reverse()) await unpartition(trx, { ...conversion, keyBefore: ['id'] });
    for (const table of ['webhook_attempts', 'idempotency_keys']) {
      await trx.raw('drop trigger if exists ?? on ??', [fillerOf(table), table]);
      await trx.raw('drop function if exists ??()', [fillerOf(table)]);
      await trx.raw('alter table ?? drop column if exists store_id', [table]);
    }
  });
}

async function expandOnSqlite(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.schema.alterTable('webhook_attempts', (t) => {
      t.uuid('store_id');
    });
    await trx.raw('update webhook_attempts set store_id = (select store_id from webhook_subscriptions s where s.id = webhook_attempts.subscription_id)');
    await trx.schema.alterTable('idempotency_keys', (t) => {
      t.uuid('store_id');
    });
    await trx.raw('update idempotency_keys set store_id = (select store_id from installations i where i.id = idempotency_keys.installation_id)');
  });
}

/** `if exists`: a database the earlier form of this migration completed has the plain index already. */
async function contractOnSqlite(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw('drop index if exists ??', [KEY_UNIQUE]);
    await trx.raw(`create index if not exists ?? on idempotency_keys (${KEY_COLUMNS.join(', ')})`, [KEY_INDEX]);
  });
}

async function uncontractOnSqlite(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw('drop index if exists ??', [KEY_INDEX]);
    await trx.raw(`create unique index ?? on idempotency_keys (${KEY_COLUMNS.join(', ')})`, [KEY_UNIQUE]);
  });
}

async function unexpandOnSqlite(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.schema.alterTable('idempotency_keys', (t) => {
      t.dropColumn('store_id');
    });
    await trx.schema.alterTable('webhook_attempts', (t) => {
      t.dropColumn('store_id');
    });
  });
}
