import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import type { Notification, Client as PgClient } from 'pg';
import { isPostgres } from './dialect';
import type { Db } from './transactions';

/**
 * Webhook work announced by the commit that made it, so that dispatchers start on it at once
 * instead of at their next poll (docs/decisions/0056-dispatchers-woken-by-commits.md).
 *
 * PostgreSQL: `pg_notify` in the writing transaction, which the server delivers at commit (and
 * drops on rollback) to every connection that listens, in any process; each process keeps one
 * connection aside to listen. A channel spans the whole database, so the payload names the schema
 * written and listeners heed only their own: services (or test suites) sharing a database in
 * schemas of their own do not wake each other. SQLite has no such thing: the dispatchers of the
 * writing process are told after the commit, and another process's writes (the CLI) are found by
 * the poll, which stays the fallback on both.
 */
export const WEBHOOK_WORK_CHANNEL = 'svc_outbox';

/** Transactions that announced already: one announcement tells everything a commit wrote. */
const announced = new WeakSet<object>();

/** SQLite only: this process's listeners, by the database file they watch (several pools may open one file). */
const local = new EventEmitter().setMaxListeners(0);
const sqliteFileOf = (db: Db) => String((db.client.config.connection as { filename?: unknown } | undefined)?.filename ?? '');

/**
 * Announces that `db`'s writes leave webhook work (outbox events, deliveries) for dispatchers. Call
 * it in the transaction that writes them: listeners hear of it once that commits, never before
 * (they would look before the rows are visible) and never after a rollback.
 */
export async function announceWebhookWork(db: Db): Promise<void> {
  if (isPostgres(db)) {
    // Per transaction object, not per outermost: a savepoint rolled back drops its own notification.
    if (db.isTransaction) {
      if (announced.has(db)) return;
      announced.add(db);
    }
    await db.raw('select pg_notify(?, coalesce(current_schema(), ?))', [WEBHOOK_WORK_CHANNEL, '']);
    return;
  }
  const file = sqliteFileOf(db);
  if (!db.isTransaction) {
    local.emit(file);
    return;
  }
  let outermost = db as Knex.Transaction;
  while (outermost.parentTransaction) outermost = outermost.parentTransaction;
  if (announced.has(outermost)) return;
  announced.add(outermost);
  outermost.executionPromise.then(
    () => local.emit(file),
    () => undefined,
  );
}

export interface ListenOptions {
  /** Said when the listening connection is lost or cannot be opened (the poll covers the gap). */
  readonly logError?: (line: string) => void;
}

/** Stops listening; the connection kept aside for it is closed with the last listener. */
export type StopListening = () => Promise<void>;

interface SharedListener {
  readonly listeners: Set<() => void>;
  close(): Promise<void>;
}

/** One per pool: the server's dispatchers share its connection. */
const shared = new WeakMap<Knex, SharedListener>();

/**
 * Calls `onWork` whenever a commit announced webhook work (`announceWebhookWork`), from any process
 * on PostgreSQL, from this one on SQLite; and once each time the listening connection is (re)opened,
 * since what was committed while it was away was not heard.
 */
export function listenForWebhookWork(db: Knex, onWork: () => void, options: ListenOptions = {}): StopListening {
  let listener = shared.get(db);
  if (!listener) {
    listener = isPostgres(db) ? postgresListener(db, options) : sqliteListener(db);
    shared.set(db, listener);
  }
  const mine = listener;
  const call = () => onWork();
  mine.listeners.add(call);
  return async () => {
    if (!mine.listeners.delete(call) || mine.listeners.size > 0) return;
    if (shared.get(db) === mine) shared.delete(db);
    await mine.close();
  };
}

function sqliteListener(db: Knex): SharedListener {
  const file = sqliteFileOf(db);
  const listeners = new Set<() => void>();
  const tell = () => {
    for (const listener of listeners) listener();
  };
  local.on(file, tell);
  return {
    listeners,
    close: async () => {
      local.off(file, tell);
    },
  };
}

/** The listening connection's `application_name` (then its schema), so that operators can tell it in `pg_stat_activity`. */
export const LISTENER_NAME = 'svc webhook listener ';

/** Between tries to reopen a lost listening connection: from this, doubling, to RECONNECT_MAX_MS, with jitter. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5000;

function postgresListener(db: Knex, { logError = () => undefined }: ListenOptions): SharedListener {
  const listeners = new Set<() => void>();
  const tell = () => {
    for (const listener of listeners) listener();
  };
  let connection: PgClient | undefined;
  let opening: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryMs = RECONNECT_FIRST_MS;
  let closed = false;

  const end = (client: PgClient) => client.end().catch(() => undefined);

  const lost = (client: PgClient, why: unknown) => {
    if (client !== connection) return;
    connection = undefined;
    void end(client);
    if (closed) return;
    logError(`The connection listening for webhook work was lost (${describe(why)}); reopening it, polling meanwhile`);
    reopenLater();
  };

  const reopenLater = () => {
    const delay = Math.round(retryMs * (0.5 + Math.random()));
    retryMs = Math.min(RECONNECT_MAX_MS, retryMs * 2);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      open();
    }, delay);
    retryTimer.unref();
  };

  const open = () => {
    opening = (async () => {
      let client: PgClient | undefined;
      try {
        client = (await db.client.acquireRawConnection()) as PgClient;
        if (closed) return void (await end(client));
        const opened = client;
        opened.on('error', (error) => lost(opened, error));
        opened.on('end', () => lost(opened, 'the server closed it'));
        const { rows } = await opened.query<{ schema: string }>(
          "select coalesce(current_schema(), '') as schema, set_config('application_name', left($1 || coalesce(current_schema(), ''), 63), false)",
          [LISTENER_NAME],
        );
        const schema = rows[0]?.schema ?? '';
        opened.on('notification', (message: Notification) => {
          if (message.channel === WEBHOOK_WORK_CHANNEL && (message.payload ?? '') === schema) tell();
        });
        await opened.query(`listen ${WEBHOOK_WORK_CHANNEL}`);
        connection = opened;
        retryMs = RECONNECT_FIRST_MS;
        tell();
      } catch (error) {
        if (client) void end(client);
        if (closed) return;
        logError(`Could not listen for webhook work (${describe(error)}); trying again, polling meanwhile`);
        reopenLater();
      }
    })().finally(() => {
      opening = undefined;
    });
  };

  open();
  return {
    listeners,
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      await opening;
      const client = connection;
      connection = undefined;
      if (client) await end(client);
    },
  };
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
