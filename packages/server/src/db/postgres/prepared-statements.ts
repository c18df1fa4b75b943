import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';
import type { Statement } from '../engine';
import { remember, rowFactory, type SqlValue } from '../rows';

/**
 * PostgreSQL's hot statements (every request makes them: the bearer token's context, a product, a
 * page), prepared once per pooled connection and then only bound and run: the server parses and
 * plans each once per connection, and no query builder runs per request (docs/decisions/0066-postgresql-read-path.md).
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

/**
 * Named by the text and the generation, so that a text forgotten and met again reuses what the
 * connections prepared (a connection keeps its statements as long as it lives).
 */
const statementNameOf = (text: string, generation: number) => `svc_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}_${generation}`;

/**
 * The statement's text with `$n` parameters: its `?` placeholders in order, or for a statement bound
 * by name its `:name` bindings (one `$n` per distinct name). A text is always bound the same way.
 */
function preparedTextOf(sql: string, byName: boolean, generation: number): PreparedText {
  const bindings: string[] = [];
  let position = 0;
  const text = byName
    ? sql.replace(/(?<![:\w]):([a-z_][a-z0-9_]*)/g, (_match, name: string) => {
        if (!bindings.includes(name)) bindings.push(name);
        return `$${bindings.indexOf(name) + 1}`;
      })
    : sql.replace(/\?/g, () => `$${++position}`);
  return { name: statementNameOf(text, generation), text, bindings };
}

/** The unnamed statement: replaced by the next Parse on its connection, so never held. */
const UNNAMED = '';

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

function shapeOf(fields: readonly FieldDescription[]): RowShape {
  return {
    build: rowFactory(fields.map((field) => field.name)),
    parsers: fields.map((field) => pg.types.getTypeParser(field.dataTypeID, 'text') as (text: string) => unknown),
  };
}

/** The text a bound value travels as (what node-postgres's own `prepareValue` gives for these types). */
const wireValue = (value: SqlValue): string | null => (value === null ? null : typeof value === 'string' ? value : String(value));

/** One statement of a run: what it binds, and the rows it answers. */
interface RunStep {
  readonly name: string;
  readonly text: string;
  readonly values: readonly (string | null)[];
  shape: RowShape | undefined;
  readonly rows: unknown[];
}

/**
 * One run of prepared statements on one pooled connection, submitted with `client.query(run)`:
 * each statement bound and executed, then one Sync, so the run is one round trip and one implicit
 * transaction (should a later statement fail, the earlier ones' writes are rolled back with it).
 * node-postgres calls `submit` when the connection is free, then the `handle…` methods for the
 * server's messages, and `callback` (which its query timeout may wrap) once with the outcome.
 *
 * node-postgres records a statement as prepared on its connection when the server confirms its
 * Parse, under the run's `name` and `text`: so only a run of one statement may parse; a run of
 * several runs statements the connection has prepared (see `PreparedStatements.rowSets`).
 */
class PreparedRun {
  private readonly steps: RunStep[];
  /** The statement the server is answering: its messages come in the order the statements went. */
  private current = 0;
  private shapes: Map<string, RowShape> | undefined;
  /** A row that could not be parsed: the run fails once the server is ready again. */
  private failure: unknown;
  /** Read by node-postgres: the statement it records as prepared when the server confirms a Parse. */
  readonly name: string | undefined;
  readonly text: string | undefined;

  constructor(
    steps: readonly Omit<RunStep, 'shape' | 'rows'>[],
    private readonly shapesOf: (connection: WireConnection) => Map<string, RowShape>,
    public callback: (error: unknown, rowSets?: unknown[][]) => void,
  ) {
    this.steps = steps.map((step) => ({ ...step, shape: undefined, rows: [] }));
    const [only] = this.steps;
    // An unnamed statement (name '') is parsed with every run: node-postgres records nothing of it.
    this.name = this.steps.length === 1 && only?.name ? only.name : undefined;
    this.text = this.name === undefined ? undefined : only?.text;
  }

  /** The name of the statement the server answered with `error`, when it refused one. */
  get refusedName(): string | undefined {
    return this.steps[this.current]?.name;
  }

  submit(connection: WireConnection): Error | null {
    const shapes = this.shapesOf(connection);
    this.shapes = shapes;
    // What the connection already holds of each named statement: its text, once parsed or on its way.
    const held = this.steps.map((step) =>
      step.name === UNNAMED ? undefined : (connection.parsedStatements[step.name] ?? connection.submittedNamedStatements[step.name]),
    );
    for (const [index, step] of this.steps.entries()) {
      if (step.name === UNNAMED) continue;
      step.shape = shapes.get(step.name);
      if (held[index] !== undefined && held[index] !== step.text) return new Error(`Prepared statement ${step.name} names another text`);
      if (held[index] === undefined && this.steps.length > 1) return new Error(`Prepared statement ${step.name} is not prepared on this connection`);
    }
    connection.stream.cork?.();
    try {
      for (const [index, step] of this.steps.entries()) {
        if (held[index] === undefined) {
          connection.parse({ name: step.name, text: step.text });
          if (step.name !== UNNAMED) connection.submittedNamedStatements[step.name] = step.text;
        }
        connection.bind({ portal: '', statement: step.name, values: step.values });
        if (!step.shape) connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '' });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: readonly FieldDescription[] }): void {
    const step = this.steps[this.current];
    if (!step) return;
    step.shape = shapeOf(message.fields);
    if (step.name !== UNNAMED) this.shapes?.set(step.name, step.shape);
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    if (this.failure !== undefined) return;
    const step = this.steps[this.current];
    const shape = step?.shape;
    if (!step || !shape) {
      this.failure = new Error(`Prepared statement ${step?.name ?? '(none)'} answered rows without their description`);
      return;
    }
    try {
      const values: unknown[] = message.fields;
      for (let index = 0; index < values.length; index += 1) {
        const text = values[index];
        if (text !== null) values[index] = (shape.parsers[index] as (text: string) => unknown)(text as string);
      }
      step.rows.push(shape.build(values));
    } catch (error) {
      this.failure = error;
    }
  }

  handleCommandComplete(): void {
    this.current += 1;
  }

  handleEmptyQuery(): void {
    this.current += 1;
  }

  handlePortalSuspended(): void {}

  /** The server refused a statement (node-postgres then expects nothing more of this run). */
  handleError(error: unknown): void {
    this.callback(error);
  }

  handleReadyForQuery(): void {
    if (this.failure !== undefined) this.callback(this.failure);
    else
      this.callback(
        null,
        this.steps.map((step) => step.rows),
      );
  }

  handleCopyInResponse(connection: WireConnection): void {
    connection.sendCopyFail('A prepared read takes no COPY data');
  }

  handleCopyData(): void {}
}

/** The part of a pooled node-postgres client this module uses. */
interface PooledClient {
  query(run: PreparedRun): unknown;
  readonly connection: Pick<WireConnection, 'parsedStatements'>;
}

interface BoundStatement {
  readonly prepared: PreparedText;
  readonly sql: string;
  readonly values: readonly SqlValue[];
  readonly wireValues: readonly (string | null)[];
}

/** PostgreSQL refuses to run a prepared statement whose result columns changed (a migration while serving). */
const isStalePlan = (error: unknown): boolean =>
  (error as { code?: unknown } | null)?.code === '0A000' && /cached plan must not change result type/.test(String((error as Error).message));

const isPositional = (params: Statement['params']): params is readonly SqlValue[] => Array.isArray(params);

/**
 * The hot statements of one pool: their `$n` texts and names, and the row shape of each statement
 * each connection has described. A named statement's columns are fixed when the connection
 * prepares it: PostgreSQL refuses to run it rather than answer other columns (see `isStalePlan`),
 * so the shape is asked for once per connection and statement.
 */
export class PreparedStatements {
  private readonly named: boolean;
  private readonly texts = new Map<string, PreparedText>();
  /** Bumped when a prepared statement's columns changed: every statement is named anew. */
  private generation = 0;
  private readonly shapesByConnection = new WeakMap<WireConnection, Map<string, RowShape>>();
  private reportedCount = 0;

  /**
   * `named: false` behind a transaction pooler (PgBouncer 1.18 hands each transaction any server
   * connection, and cannot carry a named statement across): every run parses its statements
   * unnamed, still in one round trip, and asks for their row descriptions each time.
   */
  constructor({ named }: { readonly named: boolean }) {
    this.named = named;
  }

  /**
   * The rows of each statement, in one round trip when the pooled connection has prepared them all
   * (each connection prepares a statement once: its first run on a connection goes alone, and so
   * the first request of a kind on a connection takes a round trip per statement). One round trip is
   * one implicit transaction: a statement refused rolls back the writes of those before it. Should
   * a migration change the columns of a prepared statement while the process serves, it is prepared
   * again under a new name.
   */
  async rowSets(db: Knex, statements: readonly Statement[]): Promise<unknown[][]> {
    const bound = statements.map((statement) => this.bound(statement));
    const reports = bound.map(({ sql, values }) => this.reportedTo(db, sql, values));
    const client = (await db.client.acquireConnection()) as PooledClient;
    try {
      const parsed = client.connection.parsedStatements;
      const together = bound.length > 1 && (!this.named || bound.every(({ prepared }) => parsed[prepared.name] === prepared.text));
      // A plan gone stale refuses the whole run (its writes rolled back): the statements go again one by one, prepared anew.
      const rowSets = together
        ? await this.run(client, bound).catch((error: unknown) => (isStalePlan(error) ? this.runOneByOne(client, bound) : Promise.reject(error)))
        : await this.runOneByOne(client, bound);
      for (const [index, rows] of rowSets.entries()) reports[index]?.answered(rows);
      return rowSets;
    } catch (error) {
      for (const report of reports) report?.failed(error);
      throw error;
    } finally {
      db.client.releaseConnection(client);
    }
  }

  /** The rows of one hot statement: `sql` takes `?` placeholders with an array, or `:name` bindings with an object. */
  async rows<Row>(db: Knex, sql: string, params: Statement['params']): Promise<Row[]> {
    const [rows] = await this.rowSets(db, [{ sql, params }]);
    return rows as Row[];
  }

  private bound({ sql, params }: Statement): BoundStatement {
    const positional = isPositional(params);
    const prepared = this.texts.get(sql) ?? remember(this.texts, sql, this.preparedText(sql, !positional));
    const values = positional ? params : prepared.bindings.map((name) => params[name] ?? null);
    return { prepared, sql, values, wireValues: values.map(wireValue) };
  }

  private preparedText(sql: string, byName: boolean): PreparedText {
    const prepared = preparedTextOf(sql, byName, this.generation);
    return this.named ? prepared : { ...prepared, name: UNNAMED };
  }

  private readonly shapesOf = (connection: WireConnection): Map<string, RowShape> => {
    let shapes = this.shapesByConnection.get(connection);
    if (!shapes) {
      shapes = new Map();
      this.shapesByConnection.set(connection, shapes);
    }
    return shapes;
  };

  /** Runs the statements as one run (one round trip); the refused statement's text is named anew when its plan went stale. */
  private run(client: PooledClient, statements: readonly BoundStatement[]): Promise<unknown[][]> {
    return new Promise((resolve, reject) => {
      const steps = statements.map(({ prepared, wireValues }) => ({ name: prepared.name, text: prepared.text, values: wireValues }));
      const run = new PreparedRun(steps, this.shapesOf, (error, rowSets) => {
        if (!error) return resolve(rowSets as unknown[][]);
        if (isStalePlan(error)) {
          const refused = statements.find(({ prepared }) => prepared.name === run.refusedName)?.prepared;
          if (refused && this.named) {
            this.generation += 1;
            refused.name = statementNameOf(refused.text, this.generation);
          }
        }
        reject(error);
      });
      client.query(run);
    });
  }

  /** Each statement as a run of its own, once more when its plan went stale. */
  private async runOneByOne(client: PooledClient, statements: readonly BoundStatement[]): Promise<unknown[][]> {
    const rowSets: unknown[][] = [];
    for (const statement of statements) {
      const run = () => this.run(client, [statement]).then(([rows]) => rows as unknown[]);
      rowSets.push(await run().catch((error: unknown) => (isStalePlan(error) ? run() : Promise.reject(error))));
    }
    return rowSets;
  }

  /** Knex's query events for a statement that bypasses knex, so that `/metrics` and other listeners see every statement. */
  private reportedTo(db: Knex, sql: string, values: readonly SqlValue[]): { answered(rows: unknown): void; failed(error: unknown): void } | undefined {
    if (db.listenerCount('query') === 0 && db.listenerCount('query-response') === 0) return undefined;
    const query = { __knexQueryUid: `prepared-${++this.reportedCount}`, method: 'raw', sql, bindings: values };
    db.emit('query', query);
    return { answered: (rows) => db.emit('query-response', rows, query), failed: (error) => db.emit('query-error', error, query) };
  }
}
