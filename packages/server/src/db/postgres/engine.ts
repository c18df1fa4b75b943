import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Engine, GatedRead, Judged, Locks, Partitions, Pools, Quotas, Reads, Statement, WebhookWork } from '../engine';
import { engineOfHandle, type OpenedDatabase, withEngine } from '../engine';
import { type DatabaseLog, knexLogger } from '../knex-log';
import { poolUsageOf } from '../pool';
import { postgresQuotas } from '../quotas/postgres';
import type { ReadReplicas, ReplicaSettings } from '../read-routing';
import { SharedListener } from '../shared-listener';
import { KeptResults } from '../version-kept';
import { answerWithin, disposeOf, type PgDeadlineClient, type PgPooledClient } from './internals';
import { holdLeadership, type LeaderConnection, withAdvisoryLock } from './locks';
import { postgresAnnouncer, postgresListener } from './notifications';
import { keepPostgresPartitions } from './partitions';
import { PreparedStatements } from './prepared-statements';
import { postgresReplicas } from './replicas';
import { claimOnPostgres } from './webhook-claims';

// Instants are stored as epoch milliseconds in bigint columns: read them back as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

/** How long opening one PostgreSQL connection may take, and how long a request waits for a pooled one. */
const PG_CONNECT_MS = 5000;
const PG_ACQUIRE_MS = 10_000;

/**
 * TCP keepalive's first probe after this long idle, on the sessions and the replicas' connections:
 * a server gone without a goodbye (a host lost, a partition) is found out on an idle connection too,
 * rather than when the kernel gives up on a write (about 15 minutes).
 */
const KEEPALIVE_IDLE_MS = 10_000;
const keepAlive = { keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS } as const;

/** How a pool's connections are opened and watched, beyond the settings every pool shares. */
interface PoolShape {
  /** Opening one connection may take this long (a stopped postmaster accepts TCP but never answers the startup). */
  readonly connectMs: number;
  /** A request waits at most this for a pooled connection, then fails. */
  readonly acquireMs: number;
  /** Each statement answers within this, or its connection is cut (internals.ts `answerWithin`); unset, no client-side deadline. */
  readonly answerWithinMs?: number;
  readonly keepAlive: boolean;
  /** Runs on each connection the pool opens, before any statement of the pool's; one that fails closes the connection and fails the acquire. */
  readonly claim?: (connection: LeaderConnection) => Promise<void>;
  /** Keeps its connection however long it idles (the leader's: the lock lives with the session). */
  readonly keepsItsConnection?: boolean;
}

/** The primary's pool: the server bounds its statements (`statement_timeout`), and a request waits for a connection rather than failing at once. */
const PRIMARY_POOL: PoolShape = { connectMs: PG_CONNECT_MS, acquireMs: PG_ACQUIRE_MS, keepAlive: false };

/**
 * A replica's pool: connecting, waiting for a connection and every statement are bounded by the
 * replica deadline, so a replica that stops answering costs a read at most that before the primary
 * serves it (docs/decisions/0085-replica-deadlines.md).
 */
const replicaPool = (timeoutMs: number): PoolShape => ({ connectMs: timeoutMs, acquireMs: timeoutMs, answerWithinMs: timeoutMs, keepAlive: true });

/**
 * The leader's pool: its one connection, taken with the lock (db/postgres/locks.ts), kept while it
 * lives. A statement of a round that does not answer within the statement timeout and 5 s more is
 * cut: the server would have cancelled it by then, so the session is gone (a partition).
 */
const leaderPool = (claim: PoolShape['claim'], statementTimeoutMs: number): PoolShape => ({
  connectMs: PG_CONNECT_MS,
  acquireMs: PG_ACQUIRE_MS,
  ...(statementTimeoutMs > 0 ? { answerWithinMs: statementTimeoutMs + 5000 } : {}),
  keepAlive: true,
  claim,
  keepsItsConnection: true,
});

/**
 * SQLSTATEs of a session PostgreSQL ends: connection exceptions (08), operator intervention (57P0x:
 * an administrator's termination, a shutdown, a restart), and the idle-in-transaction timeout. The
 * severity says FATAL too, but it is translated with the server's locale; the code is not.
 */
const ENDS_THE_SESSION = /^(08|57P0|25P03)/;

/**
 * Keeps a connection whose session PostgreSQL ended out of the pool from the moment it says so. Its
 * FATAL answer comes before its socket closes, and knex marks a connection only when the socket
 * has ended: in between, the pool would hand the dying connection to the next request, which would
 * fail too (a restart or a failover would fail two requests per connection instead of one). Run
 * after each connection's creation (knex's `afterCreate`), beside node-postgres's own handling of
 * the message.
 */
function retiredWhenTheSessionEnds(client: PgPooledClient): void {
  client.connection.on('errorMessage', (message) => {
    if (message.severity === 'FATAL' || message.severity === 'PANIC' || ENDS_THE_SESSION.test(message.code ?? '')) disposeOf(client, message);
  });
}

/** The `application_name` of a migration's own session, as `pg_stat_activity` shows it to an operator. */
export const MIGRATION_SESSION_NAME = 'svc migrate';

/** What runs after each connection of a pool of this shape opens (knex's `afterCreate`). */
const watchedAs =
  (shape: PoolShape) =>
  (client: PgDeadlineClient, done: (error: Error | null, client: PgPooledClient) => void): void => {
    retiredWhenTheSessionEnds(client);
    if (shape.answerWithinMs !== undefined) answerWithin(client, shape.answerWithinMs);
    if (!shape.claim) {
      done(null, client);
      return;
    }
    const session = client as unknown as pg.Client;
    shape.claim(session).then(
      () => done(null, client),
      (error: unknown) => {
        // knex keeps no connection whose creation failed: it is closed here.
        session.end().catch(() => undefined);
        done(error instanceof Error ? error : new Error(String(error)), client);
      },
    );
  };

export interface PostgresSettings {
  readonly url: string;
  /**
   * PostgreSQL itself when `url` goes through a transaction pooler (PgBouncer `pool_mode =
   * transaction`): sessions (LISTEN, advisory locks) open here, and the pool's statements run
   * unnamed (docs/decisions/0077-behind-a-transaction-pooler.md).
   */
  readonly directUrl?: string | undefined;
  readonly poolMax: number;
  readonly statementTimeoutMs: number;
  /** The schema to work in (tests give each suite its own). */
  readonly schema?: string | undefined;
  readonly log: DatabaseLog;
}

/**
 * A session of its own to PostgreSQL itself (never through a pooler), as the pool's connections are
 * opened: for LISTEN and the advisory locks, which live as long as the session.
 */
const sessionSettingsOf = (settings: PostgresSettings): pg.ClientConfig => ({
  connectionString: settings.directUrl ?? settings.url,
  statement_timeout: settings.statementTimeoutMs,
  connectionTimeoutMillis: PG_CONNECT_MS,
  ...keepAlive,
  ...(settings.schema ? { options: `-c search_path=${settings.schema}` } : {}),
});

/** A pool of PostgreSQL connections with its engine. */
export function openPostgres(settings: PostgresSettings, shape: PoolShape = PRIMARY_POOL): OpenedDatabase {
  const pooled = settings.directUrl !== undefined;
  const db = knex({
    client: 'pg',
    log: knexLogger(settings.log),
    // A statement past its time is cancelled by the server (57014), so one slow query cannot hold a
    // connection forever. A transaction pooler refuses the setting at connect: it sets it itself
    // (its `connect_query`, docs/deploy.md).
    connection: {
      connectionString: settings.url,
      ...(pooled ? {} : { statement_timeout: settings.statementTimeoutMs }),
      connectionTimeoutMillis: shape.connectMs,
      ...(shape.keepAlive ? keepAlive : {}),
    },
    pool: { min: shape.keepsItsConnection ? 1 : 0, max: settings.poolMax, afterCreate: watchedAs(shape) },
    // A request waits at most this for a free connection, then answers 503 rather than hanging.
    acquireConnectionTimeout: shape.acquireMs,
    ...(settings.schema ? { searchPath: [settings.schema] } : {}),
  });
  return withEngine(db, new PostgresEngine(settings, shape));
}

/**
 * PostgreSQL: hot statements prepared per connection and sent together, row locks and advisory
 * locks, `pg_notify` for webhook work, the quotas as rows every instance shares. Its state (the
 * prepared statements, kept results, the listening connection, quota blocks) is its own.
 */
class PostgresEngine implements Engine {
  readonly name = 'postgres';
  readonly reads: Reads;
  readonly locks: Locks;
  readonly webhookWork: WebhookWork;
  readonly quotas: Quotas;
  readonly partitions: Partitions = { keep: keepPostgresPartitions };
  readonly pools: Pools;
  private readonly session: pg.ClientConfig;

  constructor(
    private readonly settings: PostgresSettings,
    private readonly shape: PoolShape,
  ) {
    // Behind a transaction pooler a connection's named statements would be another client's.
    const pooled = settings.directUrl !== undefined;
    const statements = new PreparedStatements({ named: !pooled });
    this.session = sessionSettingsOf(settings);
    this.reads = postgresReads(statements);
    this.locks = this.postgresLocks();
    this.webhookWork = postgresWebhookWork(this.session);
    this.quotas = postgresQuotas(statements);
    this.pools = {
      pooled,
      usage: poolUsageOf,
      openAgain: () => openPostgres(this.settings, this.shape).db,
      openReplicas: (primary, urls, replicaSettings) => this.openReplicas(primary, urls, replicaSettings),
      close: () => undefined,
    };
  }

  private postgresLocks(): Locks {
    return {
      lockingRows: <Query extends Knex.QueryBuilder>(query: Query) => query.forUpdate() as Query,
      lockRows: async (query) => {
        await query.forUpdate().select('id');
      },
      skippingLocked: <Query extends Knex.QueryBuilder>(query: Query) => query.forUpdate().skipLocked() as Query,
      lockForTransaction: async (trx, key) => {
        await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [key]);
      },
      pauseBetweenBatches: undefined,
      withAdvisoryLock: (lock, work) => withAdvisoryLock(this.session, lock, work),
      holdLeadership: (_db, { retryMs, onChange }) => {
        // A session of its own to PostgreSQL itself, as LISTEN's and the migrations' lock's are.
        const session = { ...this.settings, url: this.settings.directUrl ?? this.settings.url, directUrl: undefined, poolMax: 1 };
        return holdLeadership((claim) => openPostgres(session, leaderPool(claim, this.settings.statementTimeoutMs)).db, retryMs, onChange);
      },
    };
  }

  /**
   * One connection to PostgreSQL itself (`DATABASE_DIRECT_URL` when the pool goes through a
   * transaction pooler), without the pool's `statement_timeout`: a migration's long DDL (a
   * validation, a concurrent index build) runs there for as long as it takes, each statement with
   * the lock timeout its step sets (db/postgres/online-ddl.ts).
   */
  openMigrationSession(): Knex {
    return knex({
      client: 'pg',
      log: knexLogger(this.settings.log),
      connection: {
        connectionString: this.settings.directUrl ?? this.settings.url,
        connectionTimeoutMillis: PG_CONNECT_MS,
        application_name: MIGRATION_SESSION_NAME,
      },
      pool: { min: 0, max: 1 },
      acquireConnectionTimeout: PG_ACQUIRE_MS,
      ...(this.settings.schema ? { searchPath: [this.settings.schema] } : {}),
    });
  }

  private openReplicas(primary: Knex, urls: readonly string[], settings: ReplicaSettings): ReadReplicas {
    // Reached directly, each replica is a session with the replica deadline as its statement
    // timeout, whatever the primary is behind; behind a pooler of their own its statements run
    // unnamed, and that pooler sets the timeout (`connect_query`).
    const pools = urls.map(
      (url) =>
        openPostgres(
          { ...this.settings, url, directUrl: settings.pooled ? url : undefined, statementTimeoutMs: settings.timeoutMs },
          replicaPool(settings.timeoutMs),
        ).db,
    );
    return postgresReplicas(primary, pools, settings);
  }
}

/** Hot statements prepared per connection and sent together in one round trip. */
function postgresReads(statements: PreparedStatements): Reads {
  const kept = new KeptResults();
  return {
    select: (db, batch) => statements.rowSets(db, batch),
    async selectJudged(db: Knex, judgement: Statement, read: GatedRead): Promise<Judged> {
      const [readRows = [], judgementRows = []] = await statements.rowSets(db, [read.gated(), judgement]);
      return { judgement: judgementRows, read: readRows };
    },
    keptUntilCommit: false,
    noteRequestArrival: () => undefined,
    keptForVersion: (key, version, compute) => kept.keptForVersion(key, version, compute),
  };
}

/** `pg_notify` in the writing transaction; one connection per pool kept aside to listen. */
function postgresWebhookWork(session: pg.ClientConfig): WebhookWork {
  const listener = new SharedListener((tell, opened) => postgresListener(session, tell, opened));
  return {
    announce: postgresAnnouncer(),
    listen: (onWork, options) => listener.listen(onWork, options),
    claim: claimOnPostgres,
    claimRecordsDelivered: true,
  };
}

/** A migration's own session on the PostgreSQL database `db` runs on (see `PostgresEngine.openMigrationSession`). */
export function openMigrationSession(db: Knex): Knex {
  const engine = engineOfHandle(db);
  if (!(engine instanceof PostgresEngine)) throw new Error('A migration session is opened on PostgreSQL only');
  return engine.openMigrationSession();
}
