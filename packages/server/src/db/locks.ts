import type { Knex } from 'knex';
import { type AdvisoryLock, engineOfHandle } from './engine';
import type { Db } from './transactions';

export type { AdvisoryLock, Leadership, LeadershipOptions } from './engine';
export { LeadershipLost } from './engine';

/**
 * Locks on the handle the domain works with (a pool or a transaction: its engine's `locks` port,
 * db/engine.ts, knows how): rows locked for a transaction, transactions serialised by a key, one
 * process at a time among the instances (the migrations), and the pause a batch job leaves other
 * writers.
 */

/**
 * The query as one that locks the rows it reads until the transaction ends: `for update` on
 * PostgreSQL. On SQLite a writing transaction already holds the database's one write lock (it began
 * with BEGIN IMMEDIATE, db/sqlite/writers.ts), so the query stays as it is.
 */
export const lockingRows = <Query extends Knex.QueryBuilder>(db: Db, query: Query): Query => engineOfHandle(db).locks.lockingRows(query);

/** Locks the rows `query` selects until the transaction ends (see `lockingRows`), reading only their ids. */
export const lockRows = (trx: Knex.Transaction, query: Knex.QueryBuilder): Promise<void> => engineOfHandle(trx).locks.lockRows(query);

/**
 * The query as one that locks the rows it reads and passes over rows another transaction holds, so
 * that concurrent workers take disjoint sets (`for update skip locked` on PostgreSQL; SQLite's one
 * writer takes them all).
 */
export const skippingLocked = <Query extends Knex.QueryBuilder>(db: Db, query: Query): Query => engineOfHandle(db).locks.skippingLocked(query);

/**
 * Serialises the transactions that name `key` until each ends: a PostgreSQL transaction-scoped
 * advisory lock. SQLite runs one writing transaction at a time anyway.
 */
export const lockForTransaction = (trx: Knex.Transaction, key: string): Promise<void> => engineOfHandle(trx).locks.lockForTransaction(trx, key);

/**
 * Runs `work` while this process holds the named lock, waiting for any other holder: on PostgreSQL
 * a session advisory lock; SQLite needs none (one server process writes it, db/sqlite/one-server.ts).
 */
export const withAdvisoryLock = <T>(db: Knex, lock: AdvisoryLock, work: () => Promise<T>): Promise<T> => engineOfHandle(db).locks.withAdvisoryLock(lock, work);

/** An instance that is not the leader tries again this often: a stopped leader's work waits at most this long. */
export const LEADER_RETRY_MS = 30_000;

/*
 * The leader among every instance and worker process on one database is the engine's (its `locks`
 * port, `holdLeadership`, given {@link LEADER_RETRY_MS}). On SQLite the one server process leads. On
 * PostgreSQL the leader holds a session advisory lock and runs its rounds on that session; when it
 * stops, or its session dies or stops answering, it acts no more, and another instance takes the
 * lead at its next try (db/postgres/locks.ts, docs/decisions/0086-one-leader.md).
 */
