import type { Knex } from 'knex';
import { forEngine } from './engine';
import { withAdvisoryLock } from './locks';
import { type MigrationEntry, migrations, type PhaseMigration } from './migrations';

/**
 * The schema's migrations in two phases (docs/decisions/0082-expand-then-contract.md):
 *
 * - expand: what the previous release keeps working with (tables, columns and indexes added, tables
 *   partitioned under the same names). `svc migrate` and `MIGRATE_ON_START` run it, before or while
 *   the new release rolls out.
 * - contract: what removes something the previous release still uses (an index its `ON CONFLICT`
 *   names, a key it upserts by). `svc migrate --contract` runs it once no instance of the previous
 *   release is left; it runs at once where no previous release can be running: on a database with no
 *   migrations yet, and on SQLite (one server process, no rolling deploy).
 *
 * Each phase keeps its own record (knex's table of applied migrations), so that each source lists
 * every migration its record names: knex refuses a source that lacks one it recorded.
 */
export type MigrationPhase = 'expand' | 'contract';

/**
 * Where each part of the migrations is recorded. The releases up to 2026-11-28 (migrations 001-017)
 * record theirs in knex's default `knex_migrations`, and their knex refuses to start on a table
 * naming a migration they do not have: so that such a release keeps running (and migrating at its
 * start, and running its CLI) on a database a later release expanded, the later migrations are
 * recorded elsewhere, and `knex_migrations` keeps 001-017 only. Every release from this one on reads
 * its records without that check, so a database one release ahead never stops it.
 */
type Ledger = 'first' | MigrationPhase;

const TABLE_OF: Readonly<{ [Part in Ledger]: string }> = {
  first: 'knex_migrations',
  expand: 'svc_migrations',
  contract: 'svc_migrations_contract',
};

/** The last migration recorded in `knex_migrations`. */
const LAST_OF_THE_FIRST = '017_webhook_queues';

interface PhaseEntry {
  readonly name: string;
  readonly migration: PhaseMigration;
}

const isFirst = (name: string) => name <= LAST_OF_THE_FIRST;

const entriesOf = (part: Ledger): PhaseEntry[] =>
  part === 'contract'
    ? migrations.flatMap(({ name, contract }: MigrationEntry) => (contract ? [{ name, migration: contract }] : []))
    : migrations.filter(({ name }) => isFirst(name) === (part === 'first')).map(({ name, migration }) => ({ name, migration }));

/**
 * A migration as it runs on the database's engine. On SQLite every migration runs in a
 * transaction, those that PostgreSQL runs outside one too (their SQLite parts make no concurrent
 * index): knex then takes its lock in the same transaction as the migrations, so a process killed
 * half-way leaves neither a migration half-made nor knex's lock row set.
 */
const asRun = (database: Knex, migration: PhaseMigration): PhaseMigration =>
  forEngine(database, { postgres: migration, sqlite: { ...migration, config: { ...migration.config, transaction: true } } });

const sourceOf = (database: Knex, part: Ledger): Knex.MigrationSource<PhaseEntry> => ({
  getMigrations: async () => entriesOf(part),
  getMigrationName: (entry) => entry.name,
  getMigration: async (entry) => asRun(database, entry.migration),
});

const configOf = (database: Knex, part: Ledger): Knex.MigratorConfig => ({
  migrationSource: sourceOf(database, part),
  tableName: TABLE_OF[part],
  disableMigrationsListValidation: true,
});

/** The names a record holds (none before its table exists). */
async function recorded(database: Knex, part: Ledger): Promise<Set<string>> {
  if (!(await database.schema.hasTable(TABLE_OF[part]))) return new Set();
  return new Set((await database(TABLE_OF[part]).select<{ name: string }[]>('name')).map((row) => row.name));
}

/**
 * A database migrated before the records were split (018-020 in `knex_migrations`, made by builds
 * between the release of 2026-11-28 and this one) has those records moved to `svc_migrations`, in
 * one transaction, so that the release of 2026-11-28 can start on it and this one does not run them again.
 */
async function moveLaterRecords(database: Knex): Promise<void> {
  if (!(await database.schema.hasTable(TABLE_OF.first))) return;
  const later = await database(TABLE_OF.first)
    .where('name', '>', LAST_OF_THE_FIRST)
    .select<{ name: string; batch: number; migration_time: unknown }[]>('name', 'batch', 'migration_time');
  if (later.length === 0) return;
  await database.migrate.list(configOf(database, 'expand')); // makes knex's record tables for the expand phase
  await database.transaction(async (trx) => {
    await trx(TABLE_OF.expand).insert(later);
    await trx(TABLE_OF.first).where('name', '>', LAST_OF_THE_FIRST).delete();
  });
}

async function runPhase(database: Knex, phase: Ledger): Promise<string[]> {
  // Knex's own lock row stays set when a migrating process is killed (a migration outside a
  // transaction commits as it goes). The advisory lock held here is what keeps migrations to one
  // process on PostgreSQL, so a lock row found set is a dead run's and is freed. SQLite keeps its
  // lock row, which nothing but knex's lock serialises there: its migrations and the lock are one
  // transaction (`asRun`), so a dead run leaves it free.
  if (forEngine(database, { postgres: true, sqlite: false })) await database.migrate.forceFreeMigrationsLock(configOf(database, phase));
  const [, applied] = (await database.migrate.latest(configOf(database, phase))) as [number, string[]];
  return applied;
}

export interface MigrateOptions {
  /** Runs the contract phase too: after every instance of the previous release has stopped. */
  readonly contract?: boolean;
}

/**
 * Brings the schema up to date: the expand phase, and the contract phase when asked or where no
 * previous release can be running (see above). Answers the migrations applied, a contract phase's as
 * `<name> (contract)`. Safe for any number of processes at once, on a fresh database too: on
 * PostgreSQL the whole run holds an advisory lock, since Knex's own lock lives in a table that two
 * first starts would both try to create (docs/decisions/0052-database-at-start-and-migrations.md).
 * A run cut anywhere is completed by the next (0081-migrations-run-again.md).
 */
export async function migrateToLatest(database: Knex, { contract = false }: MigrateOptions = {}): Promise<string[]> {
  return withAdvisoryLock(database, 'migrations', async () => {
    const fresh = (await recorded(database, 'first')).size === 0;
    await moveLaterRecords(database);
    const expanded = [...(await runPhase(database, 'first')), ...(await runPhase(database, 'expand'))];
    const oneRelease = forEngine(database, { postgres: false, sqlite: true });
    if (!(contract || fresh || oneRelease)) return expanded;
    const contracted = await runPhase(database, 'contract');
    return [...expanded, ...contracted.map((name) => `${name} (contract)`)];
  });
}

/** The expand migrations this build has that the database has not run, read without writing anything: what an instance waits for. */
export async function pendingMigrations(database: Knex): Promise<string[]> {
  const done = new Set([...(await recorded(database, 'first')), ...(await recorded(database, 'expand'))]);
  return migrations.map((entry) => entry.name).filter((name) => !done.has(name));
}

/** The contract phases this build has that the database has not run (`svc migrate --contract` runs them). */
export async function pendingContract(database: Knex): Promise<string[]> {
  const done = await recorded(database, 'contract');
  return entriesOf('contract')
    .map((entry) => entry.name)
    .filter((name) => !done.has(name));
}

export async function rollbackAll(database: Knex): Promise<void> {
  await database.migrate.rollback(configOf(database, 'contract'), true);
  await database.migrate.rollback(configOf(database, 'expand'), true);
  await database.migrate.rollback(configOf(database, 'first'), true);
}

/**
 * Undoes the latest migration alone (tests of one migration on a database that has rows): its
 * contract phase when that ran, else its expand phase.
 */
export async function rollbackLatest(database: Knex): Promise<void> {
  const latest = async (part: Ledger) => {
    const done = await recorded(database, part);
    return entriesOf(part)
      .map((entry) => entry.name)
      .filter((name) => done.has(name))
      .at(-1);
  };
  const expanded = (await latest('expand')) ?? (await latest('first'));
  const contracted = await latest('contract');
  const part: Ledger =
    contracted !== undefined && (expanded === undefined || contracted >= expanded)
      ? 'contract'
      : expanded !== undefined && isFirst(expanded)
        ? 'first'
        : 'expand';
  await database.migrate.down(configOf(database, part));
}

/** Runs the expand phase up to and including `last` alone (tests of one migration on a database as the release before it left it). */
export async function migrateUpTo(database: Knex, last: string): Promise<void> {
  const done = async () => new Set([...(await recorded(database, 'first')), ...(await recorded(database, 'expand'))]);
  while (!(await done()).has(last)) await database.migrate.up(configOf(database, isFirst(last) || !(await done()).has(LAST_OF_THE_FIRST) ? 'first' : 'expand'));
}
