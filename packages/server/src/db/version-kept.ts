import { engineOf } from './engine';
import type { Db } from './transactions';

/** How many results one database keeps, the least recently used going first: a report is a few hundred bytes. */
const KEPT_RESULTS = 1000;

/**
 * The result of `compute` for `key`, kept per database (its engine holds them) while `version` is
 * the one it was computed under. The caller reads the version before `compute` reads anything, and
 * the version rises in every transaction that changes what `compute` reads: so a kept result is
 * never older than the version it is kept under, on SQLite as on PostgreSQL with several instances.
 * Inside a transaction nothing is kept (its own uncommitted writes may be in play). The value is
 * shared between callers: it must not be changed.
 */
export async function keptForVersion<Value>(db: Db, key: string, version: number, compute: () => Promise<Value>): Promise<Value> {
  if (db.isTransaction) return compute();
  const kept = engineOf(db).kept;
  const hit = kept.get(key);
  kept.delete(key); // a hit moves to the newest end; a stale entry goes
  if (hit && hit.version === version) {
    kept.set(key, hit);
    return hit.value as Value;
  }
  const value = await compute();
  if (kept.size >= KEPT_RESULTS) kept.delete(kept.keys().next().value as string);
  kept.set(key, { version, value });
  return value;
}
