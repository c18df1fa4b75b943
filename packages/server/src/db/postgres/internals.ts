/**
 * What the PostgreSQL engine takes from knex and node-postgres beyond their documented API, in one
 * place. test/db/library-internals.test.ts pins each, so that an upgrade that moves one fails there,
 * loudly, rather than in production. (The prepared statements' wire protocol, db/postgres/prepared-
 * statements.ts, is pinned by its own test.)
 */

/** The part of a pooled node-postgres client `retiredWhenTheSessionEnds` touches. */
export interface PgPooledClient {
  /** node-postgres's protocol connection, which emits each ErrorResponse as `errorMessage`. */
  readonly connection: { on(event: 'errorMessage', listener: (message: { severity?: string; code?: string }) => void): void };
  /** Knex's mark of a connection its pool must not hand out again (checked by its `validateConnection`). */
  __knex__disposed?: unknown;
}

/** Marks a pooled connection as one knex must not hand out again. */
export function disposeOf(client: PgPooledClient, why: unknown): void {
  client.__knex__disposed ??= why;
}

/** A node-postgres callback: `(error, result)`. */
type Answered = (error: unknown, result?: unknown) => void;

/** The parts of a pooled node-postgres client `answerWithin` touches. */
export interface PgDeadlineClient extends PgPooledClient {
  query(config: unknown, values?: unknown, callback?: unknown): unknown;
  readonly connection: PgPooledClient['connection'] & { readonly stream: { destroy(error?: Error): void } };
}

/**
 * Every statement sent on the connection answers within `timeoutMs` of being sent, or the
 * connection is cut: marked for knex's pool never to hand out again, and its socket destroyed, so
 * node-postgres fails the statement (and any queued behind it) at once with "Connection terminated
 * unexpectedly". A server whose processes are stopped (SIGSTOP, a frozen host) or cut off by a
 * partition neither answers nor closes the socket, so nothing else would end the wait; the socket
 * is destroyed rather than ended, since a polite end waits for the server's goodbye.
 *
 * node-postgres's own `query_timeout` fails the statement but leaves it running on the
 * connection, which the pool would then hand to the next request. This wraps `client.query` in
 * each of the three forms node-postgres takes: a Submittable (the prepared statements' runs,
 * db/postgres/prepared-statements.ts) whose `callback` it calls once, a config with a callback
 * (knex), and a config whose answer is a promise.
 */
export function answerWithin(client: PgDeadlineClient, timeoutMs: number): void {
  const send = client.query.bind(client);
  client.query = (config, values, callback) => {
    let timer: NodeJS.Timeout | undefined = setTimeout(() => {
      timer = undefined;
      const error = new Error(`The statement did not answer within ${timeoutMs} ms: the connection is cut`);
      disposeOf(client, error);
      client.connection.stream.destroy(error);
    }, timeoutMs);
    timer.unref();
    const answered = () => {
      clearTimeout(timer);
      timer = undefined;
    };
    const settle =
      (callback: Answered): Answered =>
      (error, result) => {
        answered();
        callback(error, result);
      };
    if (typeof (config as { submit?: unknown } | null)?.submit === 'function') {
      const result = send(config, values, callback);
      // node-postgres has given the run its callback by now (its own, or the one passed).
      const run = config as { callback?: Answered };
      if (run.callback) run.callback = settle(run.callback);
      else answered(); // no way to hear its end
      return result;
    }
    if (typeof values === 'function') return send(config, settle(values as Answered));
    if (typeof callback === 'function') return send(config, values, settle(callback as Answered));
    const result = send(config, values);
    if (result instanceof Promise) {
      return result.then(
        (rows: unknown) => {
          answered();
          return rows;
        },
        (error: unknown) => {
          answered();
          throw error;
        },
      );
    }
    answered();
    return result;
  };
}
