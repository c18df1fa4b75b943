import type { SqlValue } from './rows';
import type { Db } from './transactions';

/**
 * Where a read that may lag goes: the store API's lists and analytics reports are served by a
 * streaming replica when it has replayed the calling installation's last write and is at most a
 * bound behind the primary; otherwise by the primary, with no error to the caller
 * (docs/decisions/0078-read-replicas.md). This module is the rule, engine-neutral and pure; the
 * replicas themselves are an engine's (db/postgres/replicas.ts), and SQLite has none.
 */

/** Who served a read. */
export type ServedBy = 'primary' | 'replica';

/**
 * Why the read went where it did: `current` (a replica had everything the caller may see),
 * `own_write` (no replica had replayed the installation's last write yet), `lagging` (every replica
 * that answers is further behind than the bound), `unavailable` (no replica answers its polls),
 * `failed` (the replica failed this read, which the primary then served), `walk` (a later page of a
 * walk that began on the primary: it stays there).
 */
export type ReadReason = 'current' | 'own_write' | 'lagging' | 'unavailable' | 'failed' | 'walk';

export interface ReadRoute {
  readonly db: Db;
  readonly servedBy: ServedBy;
  readonly reason: ReadReason;
  /** The replica's name (`replica-1`…) when one serves. */
  readonly replica?: string;
}

/** What `/readyz` and `/metrics` say of a replica. */
export interface ReplicaStatus {
  /** `replica-1`, `replica-2`… in `DATABASE_REPLICA_URL`'s order: never its address. */
  readonly name: string;
  readonly state: 'current' | 'lagging' | 'unavailable';
  /** How far behind the primary it may be now (its lag at its last poll and the time since), in ms; null when it does not answer. */
  readonly lagMs: number | null;
}

/** The read replicas of one process's database. */
export interface ReadReplicas {
  /** Whether any is configured: without one, no request pays for routing. */
  readonly configured: boolean;
  /** The statement that reads a store's recorded write positions, sent with the bearer token's (a `Statement` of db/engine). */
  positionsOf(storeId: string): { readonly sql: string; readonly params: readonly SqlValue[] };
  /**
   * Where an installation's read goes, from the rows of {@link positionsOf}. A later page of a walk
   * goes where the walk began (`walkOn`: `primary` or a replica's name), or to the primary when
   * that replica may not serve it: a page never reads an older state than the page before.
   */
  route(positionRows: readonly unknown[], installationId: string, walkOn?: string): ReadRoute;
  /** An installation's write has committed: reads of it wait for a replica to replay this far. */
  noteWrite(storeId: string, installationId: string): Promise<void>;
  /**
   * Runs a read routed to a replica within the replica deadline (`DATABASE_REPLICA_TIMEOUT_MS`):
   * past it, rejects with {@link ReplicaTimeout} at once, and the read left behind is cut by its
   * connection's own deadline (db/postgres/replicas.ts), never waited for.
   */
  withinDeadline<T>(read: () => Promise<T>): Promise<T>;
  /** A read on a replica failed (`error`: why): the replica is skipped until a poll finds it answering again. */
  failed(route: ReadRoute, error?: unknown): void;
  status(): readonly ReplicaStatus[];
  close(): Promise<void>;
}

/** How a process reads from its replicas. */
export interface ReplicaSettings {
  readonly maxLagMs: number;
  /** A read, a lag poll or a connection attempt on a replica that takes longer is cut, and the replica skipped. */
  readonly timeoutMs: number;
  /** The replica URLs go through a transaction pooler (`DATABASE_REPLICA_POOLED`). */
  readonly pooled: boolean;
  /** Told when a replica stops answering, and when it answers again. */
  readonly log: (line: string) => void;
}

/** No replicas (SQLite, or PostgreSQL without `DATABASE_REPLICA_URL`): every read on the primary. */
export function noReplicas(primary: Db): ReadReplicas {
  const route: ReadRoute = { db: primary, servedBy: 'primary', reason: 'unavailable' };
  return {
    configured: false,
    positionsOf: () => {
      throw new Error('No read replicas are configured');
    },
    route: () => route,
    noteWrite: async () => undefined,
    withinDeadline: (read) => read(),
    failed: () => undefined,
    status: () => [],
    close: async () => undefined,
  };
}

/** A WAL position as PostgreSQL writes it (`16/B374D848`), in bytes from the start of the WAL. */
export function walBytesOf(position: string): bigint {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(position);
  if (!match) throw new Error(`Not a WAL position: ${position}`);
  return (BigInt(`0x${match[1]}`) << 32n) + BigInt(`0x${match[2]}`);
}

/**
 * The primary's WAL position over the last moments, sampled at each poll: a replica that has
 * replayed a sample's position holds everything committed before the sample was taken, so its lag
 * is the age of the newest such sample. Time is `performance.now()`'s (monotonic), never the clock's.
 */
export class PrimarySamples {
  private readonly samples: { at: number; position: bigint }[] = [];

  constructor(private readonly keepMs: number) {}

  add(at: number, position: bigint): void {
    this.samples.push({ at, position });
    while (this.samples.length > 2 && (this.samples[0] as { at: number }).at < at - this.keepMs) this.samples.shift();
  }

  /** How far behind a replica at `replayed` was at `now`, in ms; undefined when older than every sample. */
  lagOf(replayed: bigint, now: number): number | undefined {
    for (let index = this.samples.length - 1; index >= 0; index -= 1) {
      const sample = this.samples[index] as { at: number; position: bigint };
      // Everything committed before this sample was taken is replayed; what came after may not be.
      if (sample.position <= replayed) return Math.max(0, now - sample.at);
    }
    return undefined;
  }
}

/** A replica as the last poll found it. */
export interface ReplicaView {
  readonly name: string;
  /** Its replay position, or undefined when its last poll failed (or it is not in recovery). */
  readonly replayed: bigint | undefined;
  readonly lagMs: number | undefined;
  /** When that poll answered (`performance.now()`); a view older than `staleAfterMs` is not trusted. */
  readonly polledAt: number;
}

export interface RoutingBounds {
  readonly maxLagMs: number;
  readonly staleAfterMs: number;
}

/**
 * How far behind the primary the replica may be at `now`: its lag at its last poll plus the time
 * since. A replica that had replayed everything committed `lagMs` before the poll answered has, at
 * worst, replayed nothing since; so between polls a replica is trusted only as long as that sum
 * stays within the bound, and one whose polls stop answering turns `lagging` by itself. Undefined
 * when the last poll found no position.
 */
export function lagAt(view: ReplicaView, now: number): number | undefined {
  if (view.replayed === undefined || view.lagMs === undefined) return undefined;
  return view.lagMs + Math.max(0, now - view.polledAt);
}

/** The state a view puts a replica in. */
export function stateOf(view: ReplicaView, now: number, bounds: RoutingBounds): ReplicaStatus['state'] {
  const lag = lagAt(view, now);
  if (lag === undefined || now - view.polledAt > bounds.staleAfterMs) return 'unavailable';
  return lag > bounds.maxLagMs ? 'lagging' : 'current';
}

/** A replica read or lag poll that did not answer within the replica deadline. */
export class ReplicaTimeout extends Error {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
  ) {
    super(`${what} did not answer within ${timeoutMs} ms`);
    this.name = 'ReplicaTimeout';
  }
}

/**
 * `work`'s outcome, or a {@link ReplicaTimeout} once `timeoutMs` has passed; `work` is then left to
 * end on its own (its failure is not reported twice).
 */
export function withinMs<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new ReplicaTimeout(what, timeoutMs)), timeoutMs);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * The replica that may serve a read needing everything up to `needed` (the installation's last
 * write, undefined when it has none recorded), trying them from `start` round the list; or why none.
 */
export function chooseReplica(
  views: readonly ReplicaView[],
  needed: bigint | undefined,
  now: number,
  bounds: RoutingBounds,
  start: number,
): { index: number } | { reason: Exclude<ReadReason, 'current' | 'failed'> } {
  let reason: Exclude<ReadReason, 'current' | 'failed'> = 'unavailable';
  for (let step = 0; step < views.length; step += 1) {
    const index = (start + step) % views.length;
    const view = views[index] as ReplicaView;
    const state = stateOf(view, now, bounds);
    if (state === 'unavailable') continue;
    if (state === 'lagging') {
      if (reason === 'unavailable') reason = 'lagging';
      continue;
    }
    if (needed !== undefined && (view.replayed as bigint) < needed) {
      reason = 'own_write';
      continue;
    }
    return { index };
  }
  return { reason };
}

/** Where a walk that began on the primary goes on: the primary (`CursorState.readOn`). */
export const PRIMARY = 'primary';

/** The installation's recorded write position among a store's rows of `positionsOf`. */
export function neededPosition(rows: readonly unknown[], installationId: string): bigint | undefined {
  for (const row of rows as readonly { installation_id: string; wal_lsn: string }[]) {
    if (row.installation_id === installationId) return walBytesOf(row.wal_lsn);
  }
  return undefined;
}
