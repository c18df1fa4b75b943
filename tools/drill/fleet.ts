import { TOOLS_KEY } from '../../packages/server/src/services/container';
import { type ServerUnderTest, startServer } from '../bench/servers';

/**
 * The instances under test: the built server (`node packages/server/dist/main.js`, one process
 * each), as a deployment runs it behind a load balancer, on the drill's cluster: `DATABASE_URL`
 * through PgBouncer, `DATABASE_DIRECT_URL` to PostgreSQL itself, the replica for lists, metrics on a
 * port of their own. The drill's client is the load balancer: it sends to the instances in turn
 * and stops sending to one that refuses connections, until it is replaced.
 */

export interface Instance {
  readonly name: string;
  readonly server: ServerUnderTest;
  readonly metricsUrl: string;
  /** Whether the balancer sends to it. */
  serving: boolean;
}

export interface FleetSettings {
  readonly pooledUrl: string;
  readonly primaryUrl: string;
  readonly replicaUrl: string;
}

/**
 * The server's settings in the drill. `NODE_ENV` stays `development` for one reason: the webhook
 * receiver is on this machine, and production refuses to deliver to a loopback address; every
 * setting the faults touch is production's (the pool, the timeouts, the replica's deadline).
 */
const settingsOf = (fleet: FleetSettings): Record<string, string> => ({
  DATABASE_URL: fleet.pooledUrl,
  DATABASE_DIRECT_URL: fleet.primaryUrl,
  DATABASE_REPLICA_URL: fleet.replicaUrl,
  SECRET_KEY: TOOLS_KEY.toString('hex'),
  MIGRATE_ON_START: 'false',
  // Any free port, which the server names in its log: two ports chosen here could meet the API's.
  METRICS_PORT: '0',
  RATE_LIMIT_PER_INSTALLATION: '1000000',
  // Retries within the drill's minutes rather than the design's hours.
  WEBHOOK_RETRY_SCHEDULE: '1000,2000,4000,8000,15000,30000,30000',
  SHUTDOWN_DELAY_MS: '0',
  LOG_LEVEL: 'info',
});

/** The metrics listener's port, from the start line that names it (it opens once the API listens). */
async function metricsPortOf(server: ServerUnderTest): Promise<number> {
  for (let tries = 0; tries < 100; tries += 1) {
    // `Metrics    http://127.0.0.1:<port>/metrics` (the banner), or `"metrics_port":<port>` (a JSON line in production).
    const port = /Metrics +https?:\/\/[^\s]+:(\d+)\/metrics|"metrics_port":(\d+)/
      .exec(server.log?.() ?? '')
      ?.slice(1)
      .find(Boolean);
    if (port) return Number(port);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the server never said where its metrics listen');
}

export class Fleet {
  readonly instances: Instance[] = [];
  private next = 0;
  private started = 0;

  constructor(private readonly settings: FleetSettings) {}

  /** Starts one more instance and puts it in the rotation once `/readyz` answers 200. */
  async add(): Promise<Instance> {
    this.started += 1;
    const server = await startServer({ built: { env: settingsOf(this.settings) } });
    const metricsPort = await metricsPortOf(server).catch(async (error: unknown) => {
      await server.stop();
      throw error;
    });
    const instance: Instance = { name: `instance-${this.started}`, server, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, serving: true };
    this.instances.push(instance);
    return instance;
  }

  /** The next instance in the rotation, or undefined when none serves. */
  pick(): Instance | undefined {
    const serving = this.instances.filter((instance) => instance.serving);
    if (serving.length === 0) return undefined;
    this.next = (this.next + 1) % serving.length;
    return serving[this.next];
  }

  /** Kills an instance as the kernel's OOM killer or a lost host would: SIGKILL, no drain. */
  kill(instance: Instance): void {
    process.kill(instance.server.pid, 'SIGKILL');
  }

  /** Takes an instance out of the rotation and out of the fleet, after it died. */
  async forget(instance: Instance): Promise<void> {
    instance.serving = false;
    this.instances.splice(this.instances.indexOf(instance), 1);
    await instance.server.stop();
  }

  async stop(): Promise<void> {
    for (const instance of this.instances.splice(0)) await instance.server.stop().catch(() => undefined);
  }
}
