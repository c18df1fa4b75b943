import pg, { type Notification, type Client as PgClient } from 'pg';
import type { ListenOptions, WorkListener } from '../engine';
import type { Db } from '../transactions';

/**
 * PostgreSQL's announcements of webhook work: `pg_notify` in the writing transaction, which the
 * server delivers at commit (and drops on rollback) to every connection that listens, in any
 * process; each process keeps one connection aside to listen. A channel spans the whole database,
 * so the payload names the schema written and listeners heed only their own: services (or test
 * suites) sharing a database in schemas of their own do not wake each other.
 */

/** The channel of webhook work (one per database; the payload names the schema). */
export const WEBHOOK_WORK_CHANNEL = 'svc_outbox';

/** Per transaction object, not per outermost: a savepoint rolled back drops its own notification. */
export function postgresAnnouncer(): (db: Db) => Promise<void> {
  const announced = new WeakSet<object>();
  return async (db) => {
    if (db.isTransaction) {
      if (announced.has(db)) return;
      announced.add(db);
    }
    await db.raw('select pg_notify(?, coalesce(current_schema(), ?))', [WEBHOOK_WORK_CHANNEL, '']);
  };
}

/** The listening connection's `application_name` (then its schema), so that operators can tell it in `pg_stat_activity`. */
export const LISTENER_NAME = 'svc webhook listener ';

/** Between tries to reopen a lost listening connection: from this, doubling, to RECONNECT_MAX_MS, with jitter. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5000;

export function postgresListener(session: pg.ClientConfig, tell: () => void, { logError = () => undefined }: ListenOptions): WorkListener {
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
        client = new pg.Client(session);
        client.on('error', () => undefined); // until it listens: a failure to connect is reported below
        await client.connect();
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
