import type { DrillCluster } from './cluster';
import type { Fleet } from './fleet';
import type { DrillPlan, FaultName } from './plan';
import type { Receiver } from './receiver';

/**
 * The faults the drill injects into a serving fleet, each under the drill's load (drill.ts runs the
 * load and judges it): what is done, how long it lasts, and what is put right after. Each says
 * what it did, and looks at what an operator would see while it lasts.
 */
export interface FaultContext {
  readonly cluster: DrillCluster;
  readonly fleet: Fleet;
  readonly receiver: Receiver;
  readonly plan: DrillPlan;
  /** Says what the drill does, as it does it. */
  readonly say: (line: string) => void;
  /** Notes what the operator sees now: each instance's /readyz, and these metrics. */
  readonly look: (metrics: readonly string[]) => Promise<void>;
}

export type FleetFaultName = Exclude<FaultName, 'migration-019'>;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds, at most `ms`; answers how long it took, or undefined if it never held. */
export async function within(ms: number, condition: () => Promise<boolean>): Promise<number | undefined> {
  const started = performance.now();
  for (;;) {
    if (await condition().catch(() => false)) return performance.now() - started;
    if (performance.now() - started > ms) return undefined;
    await sleep(100);
  }
}

const seconds = (ms: number | undefined) => (ms === undefined ? 'not within the wait' : `${(ms / 1000).toFixed(1)} s`);

/** The advisory lock of the housekeeping leader (db/postgres/locks.ts: "svc" and 2). */
const LEADER_SQL = `select l.pid from pg_locks l
  where l.locktype = 'advisory' and l.classid = ${0x737663} and l.objid = 2 and l.objsubid = 2 and l.granted
    and l.database = (select oid from pg_database where datname = current_database())`;
const LISTENERS_SQL = `select pid from pg_stat_activity where application_name like 'svc webhook listener%' and datname = current_database()`;

const pidsOf = async (cluster: DrillCluster, sql: string) => (await cluster.query<{ pid: number }>(sql)).map((row) => Number(row.pid));

const REPLICA_METRICS = ['svc_db_replica_serving', 'svc_db_replica_lag_seconds', 'svc_db_routed_reads_total'];
const POOL_METRICS = ['svc_db_pool_connections_in_use', 'svc_db_pool_acquires_waiting'];
const OUTBOX_METRICS = ['svc_outbox_events_waiting', 'svc_outbox_oldest_event_age_seconds', 'svc_webhook_delivery_duration_seconds_count'];

export const FLEET_FAULTS: Record<FleetFaultName, (context: FaultContext) => Promise<void>> = {
  async 'instance-kill'({ fleet, plan, say, look }) {
    const victim = fleet.instances[0];
    if (!victim) throw new Error('no instance to kill');
    fleet.kill(victim);
    say(`killed ${victim.name} (pid ${victim.server.pid}) with SIGKILL`);
    await sleep(1000);
    await look(POOL_METRICS);
    await fleet.forget(victim);
    const replacement = await fleet.add();
    say(`started ${replacement.name} in its place (ready in ${(replacement.server.startMs / 1000).toFixed(1)} s)`);
    await sleep(Math.max(0, plan.faultSeconds * 1000 - replacement.server.startMs));
  },

  async 'replica-freeze'({ cluster, plan, say, look }) {
    cluster.replica.freeze();
    say(`stopped every process of the replica (SIGSTOP) for ${plan.faultSeconds} s`);
    try {
      await sleep((plan.faultSeconds * 1000) / 2);
      await look(REPLICA_METRICS);
      await sleep((plan.faultSeconds * 1000) / 2);
    } finally {
      cluster.replica.thaw();
    }
    say('resumed them (SIGCONT)');
  },

  async 'leader-terminate'({ cluster, say, look }) {
    const [leader] = await pidsOf(cluster, LEADER_SQL);
    if (leader === undefined) throw new Error('no instance leads');
    await cluster.query('select pg_terminate_backend(?)', [leader]);
    say(`terminated the leader's session (backend ${leader})`);
    const took = await within(45_000, async () => {
      const [next] = await pidsOf(cluster, LEADER_SQL);
      return next !== undefined && next !== leader;
    });
    say(`a session leads again after ${seconds(took)} (the others try every 30 s)`);
    await look([]);
  },

  async 'listener-terminate'({ cluster, fleet, plan, say, look }) {
    const listeners = await pidsOf(cluster, LISTENERS_SQL);
    for (const pid of listeners) await cluster.query('select pg_terminate_backend(?)', [pid]);
    say(`terminated ${listeners.length} webhook listener sessions`);
    const took = await within(30_000, async () => {
      const now = await pidsOf(cluster, LISTENERS_SQL);
      return now.length >= fleet.instances.length && now.every((pid) => !listeners.includes(pid));
    });
    say(`every instance listens again after ${seconds(took)}`);
    await look(OUTBOX_METRICS);
    await sleep(plan.faultSeconds * 1000);
  },

  async 'pgbouncer-restart'({ cluster, say, look }) {
    const downMs = 3000;
    const restarting = cluster.pgbouncer.restart(downMs);
    say(`stopped PgBouncer (SIGTERM: every client connection ends), starting it again ${downMs / 1000} s later on the same port`);
    await sleep(downMs / 2);
    await look(POOL_METRICS);
    await restarting;
    say('PgBouncer answers again');
    await sleep(2000);
    await look(POOL_METRICS);
  },

  async 'receiver-hang'({ receiver, plan, say, look }) {
    receiver.hang();
    say(`the receiver accepts deliveries and answers none, for ${plan.faultSeconds} s (an attempt gives up after 15 s)`);
    try {
      await sleep((plan.faultSeconds * 1000) / 2);
      await look(OUTBOX_METRICS);
      await sleep((plan.faultSeconds * 1000) / 2);
    } finally {
      receiver.answer();
    }
    say('the receiver answers again');
  },
};
