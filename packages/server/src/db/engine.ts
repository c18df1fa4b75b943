import type { Knex } from 'knex';
import type { RateLimiterStoreAbstract } from 'rate-limiter-flexible';
import type { QuotaCounters, StoredLimiterOptions } from './quotas/counters';
import type { ReadReplicas, ReplicaSettings } from './read-routing';
import type { SqlValue } from './rows';
import type { Db } from './transactions';
import type { ClaimedRow, ClaimRequest } from './webhook-claim-types';

/**
 * One engine per database (docs/decisions/0075-one-engine-per-database.md): everything that differs
 * between PostgreSQL and SQLite lives behind the ports below, in `db/postgres/`, `db/sqlite/` and
 * `db/quotas/`, and `db/connection.ts` picks the engine once, when it opens the database. No file
 * outside `db/` asks which database it is on (test/db/engine-boundary.test.ts holds that).
 *
 * The process is given its engine where it opens the database (runtime/process.ts) and carries it
 * in its deps (services/container.ts): what holds the deps calls a port (`deps.engine.reads`,
 * `.locks`, `.webhookWork`, `.quotas`, `.partitions`, `.pools`). The domain works on a handle (a
 * pool, a replica's pool, a transaction) and calls db/'s functions on it (`selectRows`, the row
 * locks, `announceWebhookWork`, `keptForVersion`), which ask the engine of that handle
 * ({@link engineOfHandle}).
 *
 * Each engine holds the process's state about its database (prepared statements, kept reads, the
 * listening connection, quota blocks) privately: it lives as long as the pool and goes with it.
 */

/** The databases the service runs on. */
export type EngineName = 'postgres' | 'sqlite';

/**
 * One value per engine: how a statement that must be written differently per database is given
 * (the webhook claim). The caller writes each variant; `forEngine` picks the one of the handle's
 * engine, and a third engine would fail the compile at every such place.
 */
export type PerEngine<T> = { readonly [Name in EngineName]: T };

/** A statement with its `?` values (or `:name` bindings), as hot reads take it. */
export interface Statement {
  readonly sql: string;
  readonly params: readonly SqlValue[] | Readonly<Record<string, SqlValue>>;
  /**
   * Its answer changes with a value bound anew at every call (the instant: a token's liveness), so
   * SQLite's reader runs it every time instead of keeping its result until the next commit.
   */
  readonly fresh?: boolean;
}

/**
 * A read that only a judgement lets happen: an operation's first read, for a bearer token that lets
 * the request through (docs/decisions/0092-no-read-before-the-token.md). Its gate is a condition
 * that, once it fails, fails for good (a token, once it is not live, never is again): so a judgement
 * made after the gated read that lets the request through proves that the gate was open.
 */
export interface GatedRead {
  /** The read itself, once the judgement allowed it. */
  readonly statement: Statement;
  /** The read with its gate in its SQL: it reads no table of the read's while the gate is shut. */
  readonly gated: () => Statement;
  /** Whether the judgement's rows allow the read (where the read is made after the judgement). */
  readonly allows: (judgementRows: readonly unknown[]) => Promise<boolean>;
}

/** What {@link Engine.selectJudged} read: the judgement's rows and, unless they refused it, the read's. */
export interface Judged {
  readonly judgement: readonly unknown[];
  /** The read's rows; undefined when it was not made. Only a judgement that lets the request through may use them. */
  readonly read: readonly unknown[] | undefined;
}

/** The advisory locks the service takes between processes. */
export type AdvisoryLock = 'migrations' | 'leader';

/**
 * Whether this process is the leader of the instances on its database: the one that runs the
 * fleet-wide jobs (housekeeping, the partitions' upkeep), a round at a time
 * (docs/decisions/0086-one-leader.md).
 */
export interface Leadership {
  readonly held: boolean;
  /** Waits for the try under way (the first begins at once) and answers whether this process leads. */
  tried(): Promise<boolean>;
  /**
   * Runs one round of a fleet-wide job if this process leads, and answers its result (undefined when
   * it does not lead). The lead is confirmed first, by a statement within a deadline on the session
   * that holds it; `work` then runs on that session alone, so each of its statements runs while the
   * lead is held, and should the session be lost midway the next statement fails rather than act
   * beside a new leader ({@link LeadershipLost}).
   */
  round<T>(work: (db: Knex) => Promise<T>): Promise<T | undefined>;
  /** Gives the lead up (another instance takes it at its next try) and closes the lock's connection. */
  stop(): Promise<void>;
}

/** A round stopped because this process lost the lead during it: the rest is left to the new leader. */
export class LeadershipLost extends Error {
  constructor(readonly reason: string) {
    super(`this process no longer leads (${reason})`);
    this.name = 'LeadershipLost';
  }
}

export interface LeadershipOptions {
  /** How often an instance that is not the leader tries again (and one whose connection broke reconnects). */
  readonly retryMs?: number;
  /** Told when this process becomes the leader or stops being it. */
  readonly onChange?: (held: boolean) => void;
}

export interface ListenOptions {
  /** Said when the listening connection is lost or cannot be opened (the poll covers the gap). */
  readonly logError?: (line: string) => void;
}

/** The pool's connections, as `/metrics` reports them. */
export interface PoolUsage {
  readonly inUse: number;
  readonly waiting: number;
}

/** A table kept in partitions by time (db/partitions.ts, docs/decisions/0080-partitions-by-time.md). */
export interface TimePartitions {
  readonly table: string;
  /** The partition key: epoch milliseconds, never null. */
  readonly column: string;
  /** Every row whose `column` is at most this has expired at `now` (the table's expiry rule says the same). */
  readonly cutoff: (now: number) => number;
  /**
   * Rows the expiry rule keeps at `now` although their partition's time has passed (events not
   * fanned out yet, deliveries not final): a partition holding one is not dropped, and its other
   * rows are deleted one by one. Asked again, under the table's lock, in the transaction that drops.
   */
  readonly kept?: (rows: Knex.QueryBuilder, now: number) => Knex.QueryBuilder;
}

/** What one upkeep did to a table's partitions, by name. */
export interface PartitionUpkeep {
  readonly table: string;
  readonly created: readonly string[];
  readonly dropped: readonly string[];
  /** Partitions left for the next run, with the reason (a lock not granted in time, rows of their range in the default partition). */
  readonly deferred: readonly string[];
}

/** What an engine opens to hear announcements of webhook work. */
export interface WorkListener {
  close(): Promise<void>;
}

/** Stops listening; what was opened for it is closed with the last listener. */
export type StopListening = () => Promise<void>;

/*
 * The engine's ports: one small interface per concern. Each engine (db/postgres/engine.ts,
 * db/sqlite/engine.ts) provides every port and keeps its state (prepared statements, the reader,
 * kept results, the listening connection, quota blocks) to itself.
 */

/** Hot reads outside a transaction, and what is kept between them. */
export interface Reads {
  /**
   * The rows of each hot statement, outside a transaction. PostgreSQL sends them together, prepared,
   * in one round trip (a write among them commits with the others); SQLite reads them from its
   * reader connection, keeping results until the next commit (so they must be reads there).
   */
  select(db: Knex, statements: readonly Statement[]): Promise<(readonly unknown[])[]>;
  /**
   * A judgement's rows and a read that only it may allow ({@link GatedRead}), outside a
   * transaction. PostgreSQL sends the gated read, then the judgement, in one round trip: the read
   * reads nothing unless its gate holds, and a judgement that lets the request through after it
   * proves that it held. SQLite reads the judgement, then the read only when `allows` says so: its
   * reads cost no round trip, and the gate binds the instant, which would keep its reader from
   * keeping the read's result until the next commit.
   */
  selectJudged(db: Knex, judgement: Statement, read: GatedRead): Promise<Judged>;
  /**
   * Whether hot reads' rows are kept until the next commit (SQLite's reader): a statement that
   * binds the instant is run again at every call there, so a caller that can judge the instant
   * apart reads without it. PostgreSQL keeps no rows.
   */
  readonly keptUntilCommit: boolean;
  /** A request arrived: what is kept is checked against the database's commits again before it is used. */
  noteRequestArrival(): void;
  /** The result of `compute` for `key`, kept while `version` holds (db/version-kept.ts). */
  keptForVersion<Value>(key: string, version: number, compute: () => Promise<Value>): Promise<Value>;
}

/** Row and transaction locks, the pause between batches, and the locks between processes. */
export interface Locks {
  /** The query as one that locks the rows it reads until the transaction ends. */
  lockingRows<Query extends Knex.QueryBuilder>(query: Query): Query;
  /** Locks the rows the query selects until the transaction ends, reading only their ids. */
  lockRows(query: Knex.QueryBuilder): Promise<void>;
  /** The query as one that locks the rows it reads and passes over those another transaction has locked. */
  skippingLocked<Query extends Knex.QueryBuilder>(query: Query): Query;
  /** Serialises the transactions that name `key` until each ends. */
  lockForTransaction(trx: Knex.Transaction, key: string): Promise<void>;
  /** What a long batch job awaits between its transactions so that it never starves other writers. */
  readonly pauseBetweenBatches: (() => Promise<void>) | undefined;
  /** Runs `work` while this process holds the named lock among every process on the database. */
  withAdvisoryLock<T>(lock: AdvisoryLock, work: () => Promise<T>): Promise<T>;
  /** The leadership among every process on the database whose pool `db` is. */
  holdLeadership(db: Knex, options: LeadershipOptions & { readonly retryMs: number }): Leadership;
}

/** Webhook work between processes: announced by the commit that made it, heard by the dispatchers. */
export interface WebhookWork {
  /** Announces webhook work to listeners once `db`'s transaction commits (at once outside one). */
  announce(db: Db): Promise<void>;
  /** Calls `onWork` for every announcement heard, and once each time the listening is (re)opened. */
  listen(onWork: () => void, options: ListenOptions): StopListening;
  /** Claims due webhook deliveries under a lease (delivery/claim.ts says how), answering their rows. */
  claim<Subscription extends object>(db: Db, request: ClaimRequest): Promise<readonly ClaimedRow<Subscription>[]>;
  /** Whether the claim records deliveries that succeeded in its own statement (PostgreSQL); SQLite records them, and claims, in one transaction. */
  readonly claimRecordsDelivered: boolean;
}

/** The API quotas' counters and rate-limiter-flexible's stores (db/quotas/). */
export interface Quotas {
  readonly counters: QuotaCounters;
  /** rate-limiter-flexible's store for this database, on a table a migration made. */
  storedLimiter(db: Knex, options: StoredLimiterOptions): RateLimiterStoreAbstract;
}

/** The tables kept in partitions by time (db/partitions.ts). */
export interface Partitions {
  /** The days ahead made, those wholly expired dropped. Nothing where tables are plain (SQLite). */
  keep(db: Knex, tables: readonly TimePartitions[], now: number): Promise<PartitionUpkeep[]>;
}

/** The pool, the pools opened beside it, and what closes with it. */
export interface Pools {
  /** Whether the pool reaches the database through a transaction pooler (PgBouncer; `DATABASE_DIRECT_URL`). */
  readonly pooled: boolean;
  /** The pool's connections in use and the acquires waiting, as `/metrics` reports them. */
  usage(db: Knex): PoolUsage;
  /** A second pool on the same database, as another instance of the service would open it. */
  openAgain(): Knex;
  /**
   * Read replicas of this database (`primary`) at `urls`, each with a pool opened as this one's
   * (db/read-routing.ts). PostgreSQL's streaming replicas; SQLite has none (the configuration
   * refuses them there).
   */
  openReplicas(primary: Knex, urls: readonly string[], settings: ReplicaSettings): ReadReplicas;
  /** Closes what the engine opened beside the pool: run when the pool is destroyed. */
  close(): void;
}

/** One database's engine: its name (for `PerEngine` picks in db/ and the migrations) and its ports. */
export interface Engine {
  readonly name: EngineName;
  readonly reads: Reads;
  readonly locks: Locks;
  readonly webhookWork: WebhookWork;
  readonly quotas: Quotas;
  readonly partitions: Partitions;
  readonly pools: Pools;
}

/**
 * The engine of each open database, by the connection settings of its knex configuration: knex
 * gives a transaction's client the configuration of the pool it came from (`makeTxClient`), and a
 * copy of it to the migrator (`withUserParams` copies the configuration, not its connection
 * object), so every transaction, nested ones too, and every migration finds its database's engine
 * (test/db/library-internals.test.ts pins that).
 */
const engines = new WeakMap<object, Engine>();

const engineKeyOf = (db: Db): object => {
  const config = db.client.config as { connection?: unknown };
  return typeof config.connection === 'object' && config.connection !== null ? config.connection : config;
};

/**
 * The engine a handle (a pool, a replica's pool, or one of their transactions) runs on. The process
 * is given its engine once, by the services container; this is for what only holds a handle: db/'s
 * functions the domain calls on the handle it works with (a replica's pool has an engine of its
 * own, a transaction its pool's), the migrations, and tests' fixtures.
 */
export function engineOfHandle(db: Db): Engine {
  const engine = engines.get(engineKeyOf(db));
  if (!engine) throw new Error('This database was not opened by createDatabase (db/connection.ts): it has no engine');
  return engine;
}

/** A pool and its engine, as `db/connection.ts` opens them. */
export interface OpenedDatabase {
  readonly db: Knex;
  readonly engine: Engine;
}

/** Gives an opened pool its engine, which closes with it (`db.destroy()`). */
export function withEngine(db: Knex, engine: Engine): OpenedDatabase {
  engines.set(engineKeyOf(db), engine);
  const destroy = db.client.destroy.bind(db.client);
  db.client.destroy = (callback?: (error?: unknown) => void) => {
    engine.pools.close();
    return destroy(callback);
  };
  return { db, engine };
}

/** The variant of `variants` for the engine `db` runs on ({@link PerEngine}). */
export const forEngine = <T>(db: Db, variants: PerEngine<T>): T => variants[engineOfHandle(db).name];
