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

const TABLE_OF: Readonly<Record<MigrationPhase, string>> = { expand: 'knex_migrations', contract: 'knex_migrations_contract' };

interface PhaseEntry {
  readonly name: string;
  readonly migration: PhaseMigration;
}

const entriesOf = (phase: MigrationPhase): PhaseEntry[] =>
  phase === 'expand'
    ? migrations.map(({ name, migration }) => ({ name, migration }))
    : migrations.flatMap(({ name, contract }: MigrationEntry) => (contract ? [{ name, migration: contract }] : []));

const sourceOf = (phase: MigrationPhase): Knex.MigrationSource<PhaseEntry> => ({
  getMigrations: async () => entriesOf(phase),
  getMigrationName: (entry) => entry.name,
  getMigration: async (entry) => entry.migration,
});

const configOf = (phase: MigrationPhase): Knex.MigratorConfig => ({ migrationSource: sourceOf(phase), tableName: TABLE_OF[phase] });

/** The names a phase's record holds (none before its table exists). */
async function recorded(database: Knex, phase: MigrationPhase): Promise<Set<string>> {
  if (!(await database.schema.hasTable(TABLE_OF[phase]))) return new Set();
  return new Set((await database(TABLE_OF[phase]).select<{ name: string }[]>('name')).map((row) => row.name));
}

async function runPhase(database: Knex, phase: MigrationPhase): Promise<string[]> {
  // Knex's own lock row stays set when a migrating process is killed (a migration outside a
  // transaction commits as it goes). The advisory lock held here is what keeps migrations to one
  // process on PostgreSQL, so a lock row found set is a dead run's and is freed. SQLite keeps its
  // lock row: nothing there serialises two processes' migrations but knex's lock.
  if (forEngine(database, { postgres: true, sqlite: false })) await database.migrate.forceFreeMigrationsLock(configOf(phase));
  const [, applied] = (await database.migrate.latest(configOf(phase))) as [number, string[]];
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
    const fresh = (await recorded(database, 'expand')).size === 0;
    const expanded = await runPhase(database, 'expand');
    const oneRelease = forEngine(database, { postgres: false, sqlite: true });
    if (!(contract || fresh || oneRelease)) return expanded;
    const contracted = await runPhase(database, 'contract');
    return [...expanded, ...contracted.map((name) => `${name} (contract)`)];
  });
}

/** The expand migrations this build has that the database has not run, read without writing anything: what an instance waits for. */
export async function pendingMigrations(database: Knex): Promise<string[]> {
  const done = await recorded(database, 'expand');
  return entriesOf('expand')
    .map((entry) => entry.name)
    .filter((name) => !done.has(name));
}

/** The contract phases this build has that the database has not run (`svc migrate --contract` runs them). */
export async function pendingContract(database: Knex): Promise<string[]> {
  const done = await recorded(database, 'contract');
  return entriesOf('contract')
    .map((entry) => entry.name)
    .filter((name) => !done.has(name));
}

export async function rollbackAll(database: Knex): Promise<void> {
  await database.migrate.rollback(configOf('contract'), true);
  await database.migrate.rollback(configOf('expand'), true);
}

/**
 * Undoes the latest migration alone (tests of one migration on a database that has rows): its
 * contract phase when that ran, else its expand phase.
 */
export async function rollbackLatest(database: Knex): Promise<void> {
  const latest = (phase: MigrationPhase, done: Set<string>) =>
    entriesOf(phase)
      .map((entry) => entry.name)
      .filter((name) => done.has(name))
      .at(-1);
  const expanded = latest('expand', await recorded(database, 'expand'));
  const contracted = latest('contract', await recorded(database, 'contract'));
  const phase: MigrationPhase = contracted !== undefined && (expanded === undefined || contracted >= expanded) ? 'contract' : 'expand';
  await database.migrate.down(configOf(phase));
}

/** Runs the expand phase up to and including `last` alone (tests of one migration on a database as the release before it left it). */
export async function migrateUpTo(database: Knex, last: string): Promise<void> {
  while (!(await recorded(database, 'expand')).has(last)) await database.migrate.up(configOf('expand'));
}
