import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';
import { remember, rowFactory, type SqlValue } from './rows';

/**
 * PostgreSQL's hot statements (every request makes them: the bearer token's context, a product, a
 * page), prepared once per pooled connection and then only bound and run: the server parses and
 * plans each once per connection, and no query builder runs per request (docs/decisions.md, "The
 * PostgreSQL read path").
 *
 * A run is node-postgres's documented extension point, a Submittable (as pg-cursor is), rather than
 * its general `Query`. It does per run only what a known statement needs: no copy of the query's
 * configuration, no result metadata rebuilt for every answer, and the statement's row description
 * asked for once per connection rather than with every run.
 */

/** A hot statement's PostgreSQL text (`$1`, `$2`…) and its name, the same on every connection of the process. */
interface PreparedText {
  name: string;
  readonly text: string;
  /** The binding names in `$n` order, for a statement written with `:name` bindings. */
  readonly bindings: readonly string[];
}

const preparedTexts = new Map<string, PreparedText>();
/** Bumped when a prepared statement's columns changed: every statement is named anew. */
let statementGeneration = 0;
/**
 * Named by the text, so that a text forgotten here and met again reuses what the connections
 * prepared (a connection keeps its statements as long as it lives).
 */
const statementNameOf = (text: string) => `svc_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}_${statementGeneration}`;

/**
 * The statement's text with `$n` parameters: its `?` placeholders in order, or for a statement bound
 * by name its `:name` bindings (one `$n` per distinct name). A text is always bound the same way.
 */
function preparedTextOf(sql: string, byName: boolean): PreparedText {
  const known = preparedTexts.get(sql);
  if (known) return known;
  const bindings: string[] = [];
  let position = 0;
  const text = byName
    ? sql.replace(/(?<![:\w]):([a-z_][a-z0-9_]*)/g, (_match, name: string) => {
        if (!bindings.includes(name)) bindings.push(name);
        return `$${bindings.indexOf(name) + 1}`;
      })
    : sql.replace(/\?/g, () => `$${++position}`);
  return remember(preparedTexts, sql, { name: statementNameOf(text), text, bindings });
}

/** The wire connection node-postgres hands a Submittable: the parts a run uses. */
interface WireConnection {
  readonly stream: { cork?(): void; uncork?(): void };
  /** Statements this connection has prepared (name → text), and those whose Parse is on its way. */
  readonly parsedStatements: Record<string, string>;
  readonly submittedNamedStatements: Record<string, string>;
  parse(message: { name: string; text: string }): void;
  bind(message: { portal: string; statement: string; values: readonly (string | null)[] }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string }): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

interface FieldDescription {
  readonly name: string;
  readonly dataTypeID: number;
}

/** How a statement's rows are built from the text values of a DataRow message. */
interface RowShape {
  readonly build: (values: unknown[]) => unknown;
  readonly parsers: readonly ((text: string) => unknown)[];
}

/**
 * The row shape of each statement each connection has described. A named statement's columns are
 * fixed when the connection prepares it: PostgreSQL refuses to run it rather than answer other
 * columns (see `isStalePlan`), so the shape is asked for once per connection and statement.
 */
const shapesByConnection = new WeakMap<WireConnection, Map<string, RowShape>>();

function shapesOf(connection: WireConnection): Map<string, RowShape> {
  let shapes = shapesByConnection.get(connection);
  if (!shapes) {
    shapes = new Map();
    shapesByConnection.set(connection, shapes);
  }
  return shapes;
}

function shapeOf(fields: readonly FieldDescription[]): RowShape {
  return {
    build: rowFactory(fields.map((field) => field.name)),
    parsers: fields.map((field) => pg.types.getTypeParser(field.dataTypeID, 'text') as (text: string) => unknown),
  };
}

/** The text a bound value travels as (what node-postgres's own `prepareValue` gives for these types). */
const wireValue = (value: SqlValue): string | null => (value === null ? null : typeof value === 'string' ? value : String(value));

/**
 * One run of a prepared statement on one pooled connection, submitted with `client.query(run)`.
 * node-postgres calls `submit` when the connection is free, then the `handle…` methods for the
 * server's messages, and `callback` (which its query timeout may wrap) once with the outcome.
 */
class PreparedRun {
  readonly rows: unknown[] = [];
  private shape: RowShape | undefined;
  private shapes: Map<string, RowShape> | undefined;
  /** A row that could not be parsed: the run fails once the server is ready again. */
  private failure: unknown;

  constructor(
    /** Read by node-postgres: it records the statement as prepared on the connection under this name. */
    readonly name: string,
    readonly text: string,
    private readonly values: readonly (string | null)[],
    public callback: (error: unknown, rows?: unknown[]) => void,
  ) {}

  submit(connection: WireConnection): Error | null {
    this.shapes = shapesOf(connection);
    this.shape = this.shapes.get(this.name);
    const prepared = connection.parsedStatements[this.name] ?? connection.submittedNamedStatements[this.name];
    if (prepared !== undefined && prepared !== this.text) return new Error(`Prepared statement ${this.name} names another text`);
    connection.stream.cork?.();
    try {
      if (prepared === undefined) {
        connection.parse({ name: this.name, text: this.text });
        connection.submittedNamedStatements[this.name] = this.text;
      }
      connection.bind({ portal: '', statement: this.name, values: this.values });
      if (!this.shape) connection.describe({ type: 'P', name: '' });
      connection.execute({ portal: '' });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: readonly FieldDescription[] }): void {
    this.shape = shapeOf(message.fields);
    this.shapes?.set(this.name, this.shape);
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    if (this.failure !== undefined) return;
    const { shape } = this;
    if (!shape) {
      this.failure = new Error(`Prepared statement ${this.name} answered rows without their description`);
      return;
    }
    try {
      const values: unknown[] = message.fields;
      for (let index = 0; index < values.length; index += 1) {
        const text = values[index];
        if (text !== null) values[index] = (shape.parsers[index] as (text: string) => unknown)(text as string);
      }
      this.rows.push(shape.build(values));
    } catch (error) {
      this.failure = error;
    }
  }

  handleCommandComplete(): void {}

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {}

  /** The server refused the statement (node-postgres then expects nothing more of this run). */
  handleError(error: unknown): void {
    this.callback(error);
  }

  handleReadyForQuery(): void {
    if (this.failure !== undefined) this.callback(this.failure);
    else this.callback(null, this.rows);
  }

  handleCopyInResponse(connection: WireConnection): void {
    connection.sendCopyFail('A prepared read takes no COPY data');
  }

  handleCopyData(): void {}
}

/** The part of a pooled node-postgres client this module uses. */
interface PooledClient {
  query(run: PreparedRun): unknown;
}

function runPrepared(client: PooledClient, prepared: PreparedText, values: readonly (string | null)[]): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    client.query(new PreparedRun(prepared.name, prepared.text, values, (error, rows) => (error ? reject(error) : resolve(rows as unknown[]))));
  });
}

/** PostgreSQL refuses to run a prepared statement whose result columns changed (a migration while serving). */
const isStalePlan = (error: unknown): boolean =>
  (error as { code?: unknown } | null)?.code === '0A000' && /cached plan must not change result type/.test(String((error as Error).message));

/** Knex's query events for a statement that bypasses knex, so that `/metrics` and other listeners see every statement. */
let reportedCount = 0;
function reportedTo(db: Knex, sql: string, values: readonly SqlValue[]): { answered(rows: unknown): void; failed(error: unknown): void } | undefined {
  if (db.listenerCount('query') === 0 && db.listenerCount('query-response') === 0) return undefined;
  const query = { __knexQueryUid: `prepared-${++reportedCount}`, method: 'raw', sql, bindings: values };
  db.emit('query', query);
  return { answered: (rows) => db.emit('query-response', rows, query), failed: (error) => db.emit('query-error', error, query) };
}

const isPositional = (params: readonly SqlValue[] | Readonly<Record<string, SqlValue>>): params is readonly SqlValue[] => Array.isArray(params);

/**
 * PostgreSQL rows of a hot statement, prepared once per connection of the pool. `sql` takes `?`
 * placeholders with an array, or `:name` bindings with an object. Should a migration change the
 * columns of a prepared statement while the process serves, it is prepared again under a new name.
 */
export async function preparedRows<Row>(db: Knex, sql: string, params: readonly SqlValue[] | Readonly<Record<string, SqlValue>>): Promise<Row[]> {
  const positional = isPositional(params);
  const prepared = preparedTextOf(sql, !positional);
  const values = positional ? params : prepared.bindings.map((name) => params[name] ?? null);
  const report = reportedTo(db, sql, values);
  const client = (await db.client.acquireConnection()) as PooledClient;
  try {
    const wireValues = values.map(wireValue);
    const rows = await runPrepared(client, prepared, wireValues).catch((error: unknown) => {
      if (!isStalePlan(error)) throw error;
      statementGeneration += 1;
      prepared.name = statementNameOf(prepared.text);
      return runPrepared(client, prepared, wireValues);
    });
    report?.answered(rows);
    return rows as Row[];
  } catch (error) {
    report?.failed(error);
    throw error;
  } finally {
    db.client.releaseConnection(client);
  }
}
