import type { Knex } from 'knex';
import { databaseAnswers } from '../db/availability';
import type { Pools } from '../db/engine';
import { pendingMigrations } from '../db/migrate';
import type { ReadReplicas, ReplicaStatus } from '../db/read-routing';

/** How long readiness waits for `select 1`: a probe must answer well within an orchestrator's timeout (1 s by default). */
export const READINESS_PROBE_MS = 800;

/**
 * Whether this instance should get traffic: the database answers, the schema is at this build's
 * latest, and the instance is not stopping. `/readyz` asks it; the stop sets `draining` first.
 */
export interface Readiness {
  readonly draining: boolean;
  /** From now on the instance is stopping: readiness fails at once, before the listener closes. */
  drain(): void;
  /** Why the instance is not ready, in words, or undefined when it is. */
  notReadyBecause(): Promise<string | undefined>;
  /** How the instance reaches its database, for a ready answer: never a reason to be unready. */
  database(): { readonly pooled: boolean; readonly replicas: readonly ReplicaStatus[] };
}

export function readinessOf(db: Knex, pools: Pools, replicas: ReadReplicas): Readiness {
  let draining = false;
  // Once the schema has caught up with this build it stays so: only a newer build adds migrations.
  let migrated = false;
  return {
    get draining() {
      return draining;
    },
    drain() {
      draining = true;
    },
    database: () => ({ pooled: pools.pooled, replicas: replicas.status() }),
    async notReadyBecause() {
      if (draining) return 'the instance is stopping';
      if (!(await databaseAnswers(db, READINESS_PROBE_MS))) return 'the database does not answer';
      if (!migrated) {
        const pending = await pendingMigrations(db).catch(() => undefined);
        if (pending === undefined) return 'the database does not answer';
        if (pending.length > 0) return `${pending.length} migration(s) pending (run svc migrate)`;
        migrated = true;
      }
      return undefined;
    },
  };
}
