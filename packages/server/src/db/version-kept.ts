import { engineOfHandle } from './engine';
import type { Db } from './transactions';

/** How many results one database keeps, the least recently used going first: a report is a few hundred bytes. */
const KEPT_RESULTS = 1000;

/** A result kept while the version it was computed under holds. */
interface KeptResult {
  readonly version: number;
  readonly value: unknown;
}

/**
 * Results kept per key while their version holds, the least recently used first out: an engine
 * holds one for its database (its `reads` port), and no one else reaches into it.
 */
export class KeptResults {
  private readonly kept = new Map<string, KeptResult>();

  async keptForVersion<Value>(key: string, version: number, compute: () => Promise<Value>): Promise<Value> {
    const hit = this.kept.get(key);
    this.kept.delete(key); // a hit moves to the newest end; a stale entry goes
    if (hit && hit.version === version) {
      this.kept.set(key, hit);
      return hit.value as Value;
    }
    const value = await compute();
    if (this.kept.size >= KEPT_RESULTS) this.kept.delete(this.kept.keys().next().value as string);
    this.kept.set(key, { version, value });
    return value;
  }
}

/**
 * The result of `compute` for `key`, kept per database (its engine holds them) while `version` is
 * the one it was computed under. The caller reads the version before `compute` reads anything, and
 * the version rises in every transaction that changes what `compute` reads: so a kept result is
 * never older than the version it is kept under, on SQLite as on PostgreSQL with several instances.
 * Inside a transaction nothing is kept (its own uncommitted writes may be in play). The value is
 * shared between callers: it must not be changed.
 */
export const keptForVersion = <Value>(db: Db, key: string, version: number, compute: () => Promise<Value>): Promise<Value> =>
  db.isTransaction ? compute() : engineOfHandle(db).reads.keptForVersion(key, version, compute);
