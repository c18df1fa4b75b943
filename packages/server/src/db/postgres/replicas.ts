import type { Knex } from 'knex';
import {
  chooseReplica,
  lagAt,
  neededPosition,
  PRIMARY,
  PrimarySamples,
  type ReadReplicas,
  type ReadRoute,
  type ReplicaSettings,
  ReplicaTimeout,
  type ReplicaView,
  type RoutingBounds,
  stateOf,
  walBytesOf,
  withinMs,
} from '../read-routing';
import { selectRows } from '../reads';

/**
 * PostgreSQL's streaming replicas as read routes (docs/decisions/0078-read-replicas.md). Each
 * process polls the primary's WAL insert position and every replica's replay position a few times
 * a second; an installation's write records the primary's position once it has committed, in a
 * table on the primary every instance shares, and a read goes to a replica only once that replica
 * has replayed past it (read-your-writes, across instances) and lags at most the bound.
 *
 * Nothing on a replica may hold a request up (docs/decisions/0085-replica-deadlines.md): a read
 * and a lag poll that take longer than the replica deadline skip the replica at once, and the
 * connection they ran on is cut by its own deadline (db/postgres/engine.ts, replica pools).
 */

/** Where an installation's last write ended in the WAL, read with the bearer token's statement. */
const POSITIONS_SQL = 'select installation_id, wal_lsn::text as wal_lsn from replica_read_positions where store_id = ?';

/**
 * Recorded after the write committed: the insert position then is past the commit record, so a
 * replica that has replayed this far sees the write. Two writes of one installation racing keep the
 * later position.
 */
const NOTE_WRITE_SQL = `insert into replica_read_positions (store_id, installation_id, wal_lsn)
values (?, ?, pg_current_wal_insert_lsn())
on conflict (store_id, installation_id) do update set wal_lsn = greatest(replica_read_positions.wal_lsn, excluded.wal_lsn)`;

const PRIMARY_POSITION_SQL = 'select pg_current_wal_insert_lsn()::text as position';
const REPLICA_POSITION_SQL = 'select pg_is_in_recovery() as in_recovery, pg_last_wal_replay_lsn()::text as replayed';

interface Replica {
  readonly name: string;
  readonly db: Knex;
  view: ReplicaView;
  polling: boolean;
  /** Whether its last poll answered (undefined before the first). */
  answering?: boolean;
}

/** How often positions are polled: a tenth of the lag bound, between 50 ms and 1 s. */
export const pollIntervalOf = (maxLagMs: number): number => Math.min(1000, Math.max(50, Math.round(maxLagMs / 10)));

export function postgresReplicas(primary: Knex, pools: readonly Knex[], settings: ReplicaSettings): ReadReplicas {
  const pollMs = pollIntervalOf(settings.maxLagMs);
  // A view older than three polls (its replica stopped answering them) is not trusted.
  const bounds: RoutingBounds = { maxLagMs: settings.maxLagMs, staleAfterMs: 3 * pollMs + 500 };
  const samples = new PrimarySamples(settings.maxLagMs + 10 * pollMs);
  const replicas: Replica[] = pools.map((db, index) => ({
    name: `replica-${index + 1}`,
    db,
    view: { name: `replica-${index + 1}`, replayed: undefined, lagMs: undefined, polledAt: 0 },
    polling: false,
  }));
  let next = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  // Said once per change: a replica that stops answering, and one that answers again.
  const see = (replica: Replica, view: ReplicaView, problem?: string) => {
    replica.view = view;
    const answering = view.replayed !== undefined;
    if (answering === replica.answering) return;
    if (!answering) settings.log(`${replica.name} is skipped for the primary: ${problem ?? 'it does not answer'}`);
    else if (replica.answering === false) settings.log(`${replica.name} serves reads again`);
    replica.answering = answering;
  };

  const unanswered = (replica: Replica, problem: string) => see(replica, { ...replica.view, replayed: undefined, lagMs: undefined }, problem);

  const pollReplica = async (replica: Replica) => {
    // A poll still under way is not doubled: the next one waits for it to end.
    if (replica.polling) return;
    replica.polling = true;
    const asked = selectRows<{ in_recovery: boolean; replayed: string | null }>(replica.db, REPLICA_POSITION_SQL, []);
    void asked
      .catch(() => undefined)
      .finally(() => {
        replica.polling = false;
      });
    try {
      // Past the deadline the replica is skipped at once; the poll is left to its connection's own deadline.
      const [row] = await withinMs(asked, settings.timeoutMs, 'its lag poll');
      const now = performance.now();
      if (!row?.in_recovery || row.replayed === null) {
        unanswered(replica, 'it is not a replica in recovery (promoted, or the primary itself)');
        return;
      }
      const replayed = walBytesOf(row.replayed);
      see(replica, { name: replica.name, replayed, lagMs: samples.lagOf(replayed, now), polledAt: now });
    } catch (error) {
      unanswered(replica, (error as Error).message);
    }
  };

  const poll = async () => {
    try {
      const [row] = await selectRows<{ position: string }>(primary, PRIMARY_POSITION_SQL, []);
      if (row) samples.add(performance.now(), walBytesOf(row.position));
    } catch {
      // Without the primary there is no lag to measure; the replicas' views age until it answers.
      return;
    }
    await Promise.all(replicas.map(pollReplica));
  };

  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => void poll().finally(schedule), pollMs);
    timer.unref();
  };
  void poll().finally(schedule);

  return {
    configured: true,
    positionsOf: (storeId) => ({ sql: POSITIONS_SQL, params: [storeId] }),
    route(positionRows, installationId, walkOn): ReadRoute {
      if (walkOn === PRIMARY) return { db: primary, servedBy: 'primary', reason: 'walk' };
      // A walk that began on a replica goes on there: its replay only moves forward.
      const candidates = walkOn === undefined ? replicas : replicas.filter((replica) => replica.name === walkOn);
      const choice = chooseReplica(
        candidates.map((replica) => replica.view),
        neededPosition(positionRows, installationId),
        performance.now(),
        bounds,
        next % Math.max(1, candidates.length),
      );
      next = (next + 1) % replicas.length;
      if ('reason' in choice) return { db: primary, servedBy: 'primary', reason: choice.reason };
      const replica = candidates[choice.index] as Replica;
      return { db: replica.db, servedBy: 'replica', reason: 'current', replica: replica.name };
    },
    async noteWrite(storeId, installationId) {
      await selectRows(primary, NOTE_WRITE_SQL, [storeId, installationId], { fresh: true });
    },
    withinDeadline: (read) => withinMs(read(), settings.timeoutMs, 'a read on it'),
    failed(route, error) {
      const replica = replicas.find((candidate) => candidate.name === route.replica);
      if (replica) unanswered(replica, error instanceof ReplicaTimeout ? error.message : 'a read on it failed');
    },
    status() {
      const now = performance.now();
      return replicas.map((replica) => {
        const state = stateOf(replica.view, now, bounds);
        return { name: replica.name, state, lagMs: state === 'unavailable' ? null : Math.round(lagAt(replica.view, now) ?? 0) };
      });
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await Promise.all(replicas.map((replica) => replica.db.destroy()));
    },
  };
}
