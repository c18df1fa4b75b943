import type { Knex } from 'knex';
import type { Clock } from '../core/clock';
import { ConfigError } from '../core/config';
import { type Sealer, sealedKeyId, sealedUnder, UnreadableSealedValue } from '../credentials/sealing';
import type { Engine } from '../db/engine';
import { inTransaction } from '../db/transactions';

/**
 * Every instance on one database must seal under the same key, or each answers for what another
 * sealed with an error. The database keeps a check of the key (its id and a value sealed under it,
 * never the key), which every start compares its keys with, and `svc secrets reseal` moves once the
 * whole database is under a new key (docs/decisions/0054-one-sealing-key.md).
 */

const TABLE = 'sealing_key_check';
const NAME = 'canary';
const CANARY_PURPOSE = 'sealing-key-check';
const CANARY_TEXT = 'svc sealing key check';

interface CheckRow {
  name: string;
  key_id: string;
  canary_sealed: string;
  updated_at: number;
}

/** What the check and the re-sealing work with. */
export interface SealingDeps {
  readonly db: Knex;
  readonly engine: Engine;
  readonly clock: Clock;
  readonly sealer: Sealer;
}

const readCheck = (db: Knex | Knex.Transaction) => db<CheckRow>(TABLE).where({ name: NAME }).first();

function opensCanary(sealer: Sealer, sealed: string): boolean {
  try {
    return sealer.open(sealed, CANARY_PURPOSE) === CANARY_TEXT;
  } catch (error) {
    if (error instanceof UnreadableSealedValue) return false;
    throw error;
  }
}

/** The one line a refused start prints: which key the database expects, which this instance has, and what to do. */
function keyRefused(sealer: Sealer, expected: string): ConfigError {
  const [first = '', ...rest] = sealer.source;
  const subject = `${first.toUpperCase()}${rest.join('')}`;
  const verb = sealer.source === 'SECRET_KEYS' ? 'do' : 'does';
  const held = sealer.keyIds.length > 1 ? `these keys are ${sealer.keyIds.join(', ')}` : `this key is ${sealer.keyIds[0]}`;
  return new ConfigError(
    `${subject} ${verb} not open this database's sealed values (key id ${expected} expected, ${held}): give every instance the same SECRET_KEY or SECRET_KEYS`,
  );
}

/**
 * Refuses (a ConfigError: one line, no stack) keys that do not open the database's check; on a
 * database without one, writes it under the sealing key (the first instance's insert wins, and every
 * other is checked against it). A schema without the check's table yet (`MIGRATE_ON_START=false`
 * before `svc migrate`) is left to `/readyz`, which reports the schema behind.
 */
export async function verifySealingKey({ db, clock, sealer }: SealingDeps): Promise<void> {
  if (!(await db.schema.hasTable(TABLE))) return;
  let check = await readCheck(db);
  if (!check) {
    await db(TABLE)
      .insert({ name: NAME, key_id: sealer.keyIds[0], canary_sealed: sealer.seal(CANARY_TEXT, CANARY_PURPOSE), updated_at: clock.now() })
      .onConflict('name')
      .ignore();
    check = (await readCheck(db)) as CheckRow;
  }
  if (!opensCanary(sealer, check.canary_sealed)) throw keyRefused(sealer, check.key_id);
}

/** The key id the database's check names, or undefined before any instance has checked it. */
export async function checkedKeyId(db: Knex): Promise<string | undefined> {
  return (await readCheck(db))?.key_id;
}

/**
 * A column that holds sealed values, described beside the code that writes it (as an ExpiryRule
 * is): `svc secrets reseal` is the list of them.
 */
export interface SealedColumn {
  readonly table: string;
  /** The single-column primary key: rows are walked in its order. */
  readonly key: string;
  readonly column: string;
  /** The columns the purpose is made of besides the key; the update compares them again. */
  readonly purposeColumns: readonly string[];
  readonly purposeOf: (row: Record<string, unknown>) => string;
  /**
   * Narrows to the rows whose value may still be opened at `now`. The rest (expired answers, a
   * rotated-out secret past its day, a revoked subscription's secret) nothing opens again: they are
   * left as they are, and a key dropped after the re-sealing costs nothing.
   */
  readonly live: (rows: Knex.QueryBuilder, now: number) => Knex.QueryBuilder;
}

export interface ResealLimits {
  /** Rows one transaction re-seals at most, so no transaction holds its locks (or SQLite's writer) for long. */
  readonly batchRows: number;
}

export const RESEAL_LIMITS: ResealLimits = { batchRows: 200 };

/** A value that no key of the ring opens: re-sealing cannot move it, and the check stays where it is. */
export interface UnreadableValue {
  readonly table: string;
  readonly column: string;
  readonly id: string;
  /** The key it names, or undefined for a value sealed before key ids. */
  readonly keyId: string | undefined;
}

export interface ColumnReseal {
  readonly table: string;
  readonly column: string;
  readonly resealed: number;
  /** Rows that another instance changed between the read and the update (left to it, or to the next pass). */
  readonly changedMeanwhile: number;
  readonly unreadable: readonly UnreadableValue[];
}

export interface Reseal {
  readonly columns: readonly ColumnReseal[];
  /** Every live sealed value is under the first key now, and so is the check. */
  readonly complete: boolean;
  /** The live values still under another key after the last pass (the unreadable ones among them). */
  readonly remaining: number;
  /** The key id the database's check names after the run. */
  readonly checkedKeyId: string | undefined;
}

/** The live rows of `column` holding a sealed value under another key than the sealing one. */
function stale(db: Knex | Knex.Transaction, sealed: SealedColumn, sealer: Sealer, now: number): Knex.QueryBuilder {
  const prefix = sealedUnder(sealer.keyIds[0] as string);
  const rows = db(sealed.table)
    .whereNotNull(sealed.column)
    // Plain JSON stored before sealing began is no sealed value: it is left alone.
    .whereRaw('substr(??, 1, 6) = ?', [sealed.column, 'sealed'])
    .whereRaw('substr(??, 1, ?) <> ?', [sealed.column, prefix.length, prefix]);
  return sealed.live(rows, now);
}

/** One pass over a column in key order, a short transaction per batch; each row is updated only if it is still as read. */
async function resealColumn(deps: SealingDeps, sealed: SealedColumn, now: number, limits: ResealLimits): Promise<ColumnReseal> {
  const { db, sealer } = deps;
  const pause = deps.engine.locks.pauseBetweenBatches;
  let resealed = 0;
  let changedMeanwhile = 0;
  const unreadable: UnreadableValue[] = [];
  let after: unknown;
  for (;;) {
    const rows = await inTransaction(db, async (trx) => {
      const query = stale(trx, sealed, sealer, now)
        .select(sealed.key, sealed.column, ...sealed.purposeColumns)
        .orderBy(sealed.key)
        .limit(limits.batchRows);
      const batch: Record<string, unknown>[] = await (after === undefined ? query : query.where(sealed.key, '>', after as string));
      for (const row of batch) {
        const value = row[sealed.column] as string;
        const purpose = sealed.purposeOf(row);
        let plaintext: string;
        try {
          plaintext = sealer.open(value, purpose);
        } catch (error) {
          if (!(error instanceof UnreadableSealedValue)) throw error;
          unreadable.push({ table: sealed.table, column: sealed.column, id: String(row[sealed.key]), keyId: sealedKeyId(value) });
          continue;
        }
        const asRead = Object.fromEntries([sealed.key, sealed.column, ...sealed.purposeColumns].map((name) => [name, row[name]]));
        const updated = await trx(sealed.table)
          .where(asRead)
          .update({ [sealed.column]: sealer.seal(plaintext, purpose) });
        if (updated === 1) resealed += 1;
        else changedMeanwhile += 1;
      }
      return batch;
    });
    if (rows.length < limits.batchRows) break;
    after = rows.at(-1)?.[sealed.key];
    await pause?.();
  }
  return { table: sealed.table, column: sealed.column, resealed, changedMeanwhile, unreadable };
}

/** Passes over every column while a pass finds rows changed under it; a few are enough, as another instance seals under the first key too. */
const MAX_PASSES = 3;

/**
 * Re-seals every live sealed value of these columns under the sealing key, then the database's
 * check, so that a key dropped afterwards is refused only if something still needs it. Resumable:
 * values under the sealing key already are not read again. Safe beside serving instances, as long
 * as they all hold the sealing key (they seal under it too).
 */
export async function resealAll(deps: SealingDeps, columns: readonly SealedColumn[], limits: ResealLimits = RESEAL_LIMITS): Promise<Reseal> {
  const now = deps.clock.now();
  const totals = new Map<string, { resealed: number; changedMeanwhile: number; unreadable: readonly UnreadableValue[] }>();
  for (let pass = 0; pass < MAX_PASSES; pass += 1) {
    let changed = 0;
    for (const sealed of columns) {
      const result = await resealColumn(deps, sealed, now, limits);
      const name = `${sealed.table}.${sealed.column}`;
      const before = totals.get(name);
      totals.set(name, {
        resealed: (before?.resealed ?? 0) + result.resealed,
        changedMeanwhile: (before?.changedMeanwhile ?? 0) + result.changedMeanwhile,
        unreadable: result.unreadable,
      });
      changed += result.changedMeanwhile;
    }
    if (changed === 0) break;
  }
  let remaining = 0;
  for (const sealed of columns) {
    const [row] = await stale(deps.db, sealed, deps.sealer, now).count({ count: '*' });
    remaining += Number(row?.count ?? 0);
  }
  const complete = remaining === 0 && (await resealCheck(deps));
  return {
    columns: columns.map((sealed) => {
      const total = totals.get(`${sealed.table}.${sealed.column}`);
      return { table: sealed.table, column: sealed.column, resealed: 0, changedMeanwhile: 0, unreadable: [], ...total };
    }),
    complete,
    remaining,
    checkedKeyId: await checkedKeyId(deps.db),
  };
}

/** Moves the check under the sealing key (it must open under the ring first); false when it does not open. */
async function resealCheck(deps: SealingDeps): Promise<boolean> {
  const { db, clock, sealer } = deps;
  const check = await readCheck(db);
  if (!check) {
    await verifySealingKey(deps);
    return true;
  }
  if (sealer.isCurrent(check.canary_sealed)) return true;
  if (!opensCanary(sealer, check.canary_sealed)) return false;
  await db(TABLE)
    .where({ name: NAME, canary_sealed: check.canary_sealed })
    .update({ key_id: sealer.keyIds[0], canary_sealed: sealer.seal(CANARY_TEXT, CANARY_PURPOSE), updated_at: clock.now() });
  return sealer.isCurrent((await readCheck(db))?.canary_sealed ?? '');
}
