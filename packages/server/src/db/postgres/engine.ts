import knex, { type Knex } from 'knex';
import pg from 'pg';
import { RateLimiterPostgres } from 'rate-limiter-flexible';
import type { Engine, GatedRead, Judged, KeptResult, LeadershipOptions, Statement, StoredLimiterOptions } from '../engine';
import { engineOf, withEngine } from '../engine';
import { type DatabaseLog, knexLogger } from '../knex-log';
import type { ReadReplicas, ReplicaSettings } from '../read-routing';
import { SharedListener } from '../shared-listener';
import { libraryStoreOptions } from '../stored-limiters';
import { disposeOf, type PgPooledClient } from './internals';
import { holdLeadership, withAdvisoryLock } from './locks';
import { postgresAnnouncer, postgresListener } from './notifications';
import { keepPostgresPartitions } from './partitions';
import { PreparedStatements } from './prepared-statements';
import { postgresQuotaCounters } from './quota-counters';
import { postgresReplicas } from './replicas';

// Instants are stored as epoch milliseconds in bigint columns: read them back as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

/** How long opening one PostgreSQL connection may take, and how long a request waits for a pooled one. */
const PG_CONNECT_MS = 5000;
const PG_ACQUIRE_MS = 10_000;

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
function retiredWhenTheSessionEnds(client: PgPooledClient, done: (error: Error | null, client: PgPooledClient) => void): void {
  client.connection.on('errorMessage', (message) => {
    if (message.severity === 'FATAL' || message.severity === 'PANIC' || ENDS_THE_SESSION.test(message.code ?? '')) disposeOf(client, message);
  });
  done(null, client);
}

/** The `application_name` of a migration's own session, as `pg_stat_activity` shows it to an operator. */
export const MIGRATION_SESSION_NAME = 'svc migrate';

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
  ...(settings.schema ? { options: `-c search_path=${settings.schema}` } : {}),
});

/** A pool of PostgreSQL connections with its engine. */
export function openPostgres(settings: PostgresSettings): Knex {
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
      connectionTimeoutMillis: PG_CONNECT_MS,
    },
    pool: { min: 0, max: settings.poolMax, afterCreate: retiredWhenTheSessionEnds },
    // A request waits at most this for a free connection, then answers 503 rather than hanging.
    acquireConnectionTimeout: PG_ACQUIRE_MS,
    ...(settings.schema ? { searchPath: [settings.schema] } : {}),
  });
  return withEngine(db, new PostgresEngine(settings));
}

/**
 * PostgreSQL: hot statements prepared per connection and sent together, row locks and advisory
 * locks, `pg_notify` for webhook work, the quotas as rows every instance shares.
 */
class PostgresEngine implements Engine {
  readonly name = 'postgres';
  readonly pooled: boolean;
  readonly kept = new Map<string, KeptResult>();
  readonly pauseBetweenBatches = undefined;
  private readonly statements: PreparedStatements;
  readonly quotaCounters: Engine['quotaCounters'];
  readonly announceWebhookWork = postgresAnnouncer();
  private readonly session: pg.ClientConfig;
  private readonly listener: SharedListener;

  constructor(private readonly settings: PostgresSettings) {
    // Behind a transaction pooler a connection's named statements would be another client's.
    this.pooled = settings.directUrl !== undefined;
    this.statements = new PreparedStatements({ named: !this.pooled });
    this.quotaCounters = postgresQuotaCounters(this.statements);
    this.session = sessionSettingsOf(settings);
    this.listener = new SharedListener((tell, opened) => postgresListener(this.session, tell, opened));
  }

  select(db: Knex, statements: Parameters<Engine['select']>[1]) {
    return this.statements.rowSets(db, statements);
  }

  async selectJudged(db: Knex, judgement: Statement, read: GatedRead): Promise<Judged> {
    const [readRows = [], judgementRows = []] = await this.statements.rowSets(db, [read.gated(), judgement]);
    return { judgement: judgementRows, read: readRows };
  }

  noteRequestArrival(): void {}

  lockingRows<Query extends Knex.QueryBuilder>(query: Query): Query {
    return query.forUpdate() as Query;
  }

  async lockRows(query: Knex.QueryBuilder): Promise<void> {
    await query.forUpdate().select('id');
  }

  skippingLocked<Query extends Knex.QueryBuilder>(query: Query): Query {
    return query.forUpdate().skipLocked() as Query;
  }

  readonly keepPartitions = keepPostgresPartitions;

  async lockForTransaction(trx: Knex.Transaction, key: string): Promise<void> {
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [key]);
  }

  withAdvisoryLock<T>(lock: Parameters<Engine['withAdvisoryLock']>[0], work: () => Promise<T>): Promise<T> {
    return withAdvisoryLock(this.session, lock, work);
  }

  holdLeadership({ retryMs, onChange }: LeadershipOptions & { readonly retryMs: number }) {
    return holdLeadership(this.session, retryMs, onChange);
  }

  listenForWebhookWork(onWork: () => void, options: Parameters<Engine['listenForWebhookWork']>[1]) {
    return this.listener.listen(onWork, options);
  }

  storedLimiter(db: Knex, options: StoredLimiterOptions) {
    return new RateLimiterPostgres(libraryStoreOptions(db, options));
  }

  openAgain(): Knex {
    return openPostgres(this.settings);
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

  openReplicas(primary: Knex, urls: readonly string[], settings: ReplicaSettings): ReadReplicas {
    // Opened as the primary's pool is, behind a pooler too (then its statements run unnamed there).
    const pools = urls.map((url) => openPostgres({ ...this.settings, url, directUrl: this.settings.directUrl === undefined ? undefined : url }));
    return postgresReplicas(primary, pools, settings);
  }

  close(): void {}
}

/** A migration's own session on the PostgreSQL database `db` runs on (see `PostgresEngine.openMigrationSession`). */
export function openMigrationSession(db: Knex): Knex {
  const engine = engineOf(db);
  if (!(engine instanceof PostgresEngine)) throw new Error('A migration session is opened on PostgreSQL only');
  return engine.openMigrationSession();
}
