import type { Knex } from 'knex';
import { openMigrationSession } from './engine';

/**
 * How a migration changes a large table on PostgreSQL while the service writes to it
 * (docs/decisions/0081-migrations-run-again.md): on a session of its own to PostgreSQL itself,
 * without the pool's `statement_timeout`, in named steps, each of which may be cut (a lock or
 * statement timeout, a cancelled statement, a lost session, a killed process) and is then done
 * again, from what the cut left, by the next run.
 *
 * - A short step (one that takes a lock that stops writes, for a moment) waits for its lock at most
 *   `lockTimeoutMs`, so that it never queues the table's writers behind it for longer, and is tried
 *   again with a growing pause when the lock was not granted (55P03).
 * - A long step (a backfill, a validation, a concurrent index build) takes no lock that stops
 *   writes, so it waits for its locks as long as it must, and runs as long as it takes.
 */

/** The lock waits and retries of short steps. */
export interface DdlSettings {
  /** How long a short step waits for its lock before it gives up and is tried again. */
  readonly lockTimeoutMs: number;
  /** How many times a short step is tried in all before the migration fails. */
  readonly attempts: number;
  /** The pause after the first refused lock; it doubles after each. */
  readonly backoffMs: number;
}

/** 5 s waits, 6 tries, pauses of 1, 2, 4, 8 and 16 s: a table busy for a minute fails the run, which the next `svc migrate` completes. */
export const DDL_SETTINGS: DdlSettings = { lockTimeoutMs: 5000, attempts: 6, backoffMs: 1000 };

/** A step as a test (or an operator's log) sees it before it runs. */
export interface StepStart {
  readonly table: string;
  readonly step: string;
  readonly kind: StepKind;
  /** The backend pid of the session that runs it (`pg_stat_activity.pid`). */
  readonly pid: number;
}

export type StepKind = 'short' | 'long';

type StepObserver = (start: StepStart) => Promise<void> | void;

let observer: StepObserver | undefined;
let settings: DdlSettings = DDL_SETTINGS;

/**
 * Tells `observe` of every step before it runs, and takes `using` for short steps, until the
 * returned function is called: the failure test cuts each step in turn this way.
 */
export function observeSteps(observe: StepObserver, using: DdlSettings = DDL_SETTINGS): () => void {
  observer = observe;
  settings = using;
  return () => {
    observer = undefined;
    settings = DDL_SETTINGS;
  };
}

const codeOf = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : undefined;

/** lock_not_available: a lock not granted within `lock_timeout`. */
export const isLockTimeout = (error: unknown): boolean => codeOf(error) === '55P03';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A migration's own session, with its steps. */
export class DdlSession {
  private constructor(
    readonly db: Knex,
    private readonly table: string,
  ) {}

  /** Opens a session on the database `pool` reaches; each step is named after `table`. */
  static open(pool: Knex, table: string): DdlSession {
    return new DdlSession(openMigrationSession(pool), table);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }

  /** Runs one step (see the module's comment); `work` runs on the session (a transaction of its own if it opens one). */
  async step<T>(step: string, kind: StepKind, work: (db: Knex) => Promise<T>): Promise<T> {
    const tries = kind === 'short' ? settings.attempts : 1;
    for (let attempt = 1; ; attempt += 1) {
      const { rows } = await this.db.raw<{ rows: { pid: number }[] }>(`select pg_backend_pid() as pid, set_config('lock_timeout', ?, false)`, [
        kind === 'short' ? `${settings.lockTimeoutMs}ms` : '0',
      ]);
      await observer?.({ table: this.table, step, kind, pid: Number(rows[0]?.pid) });
      try {
        return await work(this.db);
      } catch (error) {
        if (!isLockTimeout(error) || attempt >= tries) throw error;
        await pause(settings.backoffMs * 2 ** (attempt - 1));
      }
    }
  }
}

/** What PostgreSQL holds under a relation's name: a plain table (`r`), a partitioned one (`p`), or nothing. */
export async function relationKind(db: Knex, name: string): Promise<string | undefined> {
  const { rows } = await db.raw<{ rows: { kind: string }[] }>('select relkind as kind from pg_class where oid = to_regclass(?)', [name]);
  return rows[0]?.kind;
}

export type IndexState = 'absent' | 'valid' | 'invalid';

/** Whether an index exists and can be used: a cancelled CREATE INDEX CONCURRENTLY leaves an INVALID one behind. */
export async function indexState(db: Knex, name: string): Promise<IndexState> {
  const { rows } = await db.raw<{ rows: { valid: boolean }[] }>('select indisvalid as valid from pg_index where indexrelid = to_regclass(?)', [name]);
  const row = rows[0];
  if (!row) return 'absent';
  return row.valid ? 'valid' : 'invalid';
}

export async function hasConstraint(db: Knex, table: string, name: string): Promise<boolean> {
  const { rows } = await db.raw<{ rows: unknown[] }>('select 1 from pg_constraint where conrelid = to_regclass(?) and conname = ?', [table, name]);
  return rows.length > 0;
}

export async function isNotNull(db: Knex, table: string, column: string): Promise<boolean> {
  const { rows } = await db.raw<{ rows: { notnull: boolean }[] }>(
    'select attnotnull as notnull from pg_attribute where attrelid = to_regclass(?) and attname = ? and not attisdropped',
    [table, column],
  );
  return rows[0]?.notnull === true;
}

/**
 * From about this many rows (the planner's estimate) an index is built CONCURRENTLY, which does not
 * stop writes but scans twice and waits for every transaction open on the database; below it a
 * plain build's brief write lock costs less. A table never analysed counts as large.
 */
export const CONCURRENT_INDEX_FROM_ROWS = 100_000;

async function buildsConcurrently(db: Knex, table: string): Promise<boolean> {
  const { rows } = await db.raw<{ rows: { rows: number }[] }>('select reltuples as rows from pg_class where oid = to_regclass(?)', [table]);
  const estimate = Number(rows[0]?.rows ?? 0);
  return estimate < 0 || estimate >= CONCURRENT_INDEX_FROM_ROWS;
}

export interface IndexSpec {
  readonly name: string;
  readonly columns: readonly string[];
  readonly unique?: boolean;
}

/**
 * The index, valid, whatever an earlier run left: an INVALID one (a concurrent build cut half-way,
 * which `if not exists` would keep) is dropped and built again. Large tables' builds run
 * CONCURRENTLY (a long step); small ones' take the write lock briefly (a short step).
 */
export async function ensureIndex(session: DdlSession, table: string, index: IndexSpec): Promise<void> {
  const state = await indexState(session.db, index.name);
  if (state === 'valid') return;
  const concurrently = await buildsConcurrently(session.db, table);
  const kind: StepKind = concurrently ? 'long' : 'short';
  if (state === 'invalid')
    await session.step(`drop the invalid index ${index.name}`, kind, (db) =>
      db.raw(`drop index ${concurrently ? 'concurrently' : ''} if exists ??`, [index.name]),
    );
  await session.step(`build the index ${index.name}`, kind, (db) =>
    db.raw(
      `create ${index.unique ? 'unique' : ''} index ${concurrently ? 'concurrently' : ''} if not exists ?? on ?? (${index.columns.map(() => '??').join(', ')})`,
      [index.name, table, ...index.columns],
    ),
  );
}
