import knex, { type Knex } from 'knex';
import pg from 'pg';
import { RateLimiterPostgres } from 'rate-limiter-flexible';
import type { Engine, KeptResult, LeadershipOptions, StoredLimiterOptions } from '../engine';
import { withEngine } from '../engine';
import { type DatabaseLog, knexLogger } from '../knex-log';
import { SharedListener } from '../shared-listener';
import { disposeOf, type PgPooledClient } from './internals';
import { holdLeadership, withAdvisoryLock } from './locks';
import { postgresAnnouncer, postgresListener } from './notifications';
import { PreparedStatements } from './prepared-statements';
import { postgresQuotaCounters } from './quota-counters';

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

export interface PostgresSettings {
  readonly url: string;
  readonly poolMax: number;
  readonly statementTimeoutMs: number;
  /** The schema to work in (tests give each suite its own). */
  readonly schema?: string | undefined;
  readonly log: DatabaseLog;
}

/** A pool of PostgreSQL connections with its engine. */
export function openPostgres(settings: PostgresSettings): Knex {
  const db = knex({
    client: 'pg',
    log: knexLogger(settings.log),
    // A statement past its time is cancelled by the server (57014), so one slow query cannot hold a connection forever.
    connection: { connectionString: settings.url, statement_timeout: settings.statementTimeoutMs, connectionTimeoutMillis: PG_CONNECT_MS },
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
  readonly kept = new Map<string, KeptResult>();
  readonly pauseBetweenBatches = undefined;
  private readonly statements = new PreparedStatements();
  readonly quotaCounters = postgresQuotaCounters(this.statements);
  readonly announceWebhookWork = postgresAnnouncer();
  private listener: SharedListener | undefined;

  constructor(private readonly settings: PostgresSettings) {}

  select(db: Knex, statements: Parameters<Engine['select']>[1]) {
    return this.statements.rowSets(db, statements);
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

  async lockForTransaction(trx: Knex.Transaction, key: string): Promise<void> {
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [key]);
  }

  withAdvisoryLock<T>(db: Knex, lock: Parameters<Engine['withAdvisoryLock']>[1], work: () => Promise<T>): Promise<T> {
    return withAdvisoryLock(db, lock, work);
  }

  holdLeadership(db: Knex, { retryMs, onChange }: LeadershipOptions & { readonly retryMs: number }) {
    return holdLeadership(db, retryMs, onChange);
  }

  listenForWebhookWork(db: Knex, onWork: () => void, options: Parameters<Engine['listenForWebhookWork']>[2]) {
    this.listener ??= new SharedListener((tell, opened) => postgresListener(db, tell, opened));
    return this.listener.listen(onWork, options);
  }

  storedLimiter(db: Knex, options: StoredLimiterOptions) {
    // The library's sweep timer would outlive a closed pool: the caller sweeps instead.
    return new RateLimiterPostgres({ ...options, storeClient: db, storeType: 'knex', tableCreated: true, clearExpiredByTimeout: false });
  }

  openAgain(): Knex {
    return openPostgres(this.settings);
  }

  close(): void {}
}
