import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import type { Knex } from 'knex';

/** A bound value of a hot-path read. */
export type SqlValue = string | number | null;

/**
 * Prepared statements kept per connection (the oldest dropped beyond this): a process has few SQL
 * texts, as knex generates the same text for the same query shape.
 */
const STATEMENT_CACHE_SIZE = 500;

/** A bounded map: past the bound, the entry added first goes. */
function remember<Value>(entries: Map<string, Value>, key: string, value: Value): Value {
  if (entries.size >= STATEMENT_CACHE_SIZE) entries.delete(entries.keys().next().value as string);
  entries.set(key, value);
  return value;
}

/**
 * The writer connection's `prepare`: it reuses the statement prepared earlier for the same SQL
 * (compiling SQL is most of a simple query's cost, and knex prepares anew for every query), and its
 * write statements tell the reader to check for commits (see `noticingWrites`). Reuse is safe:
 * statements are run to completion (`all`/`run`, never a pending `iterate`), and SQLite re-prepares
 * one whose schema changed.
 */
export function cacheStatements<Connection extends { prepare(sql: string): unknown }>(connection: Connection): Connection {
  const prepare = connection.prepare.bind(connection);
  const statements = new Map<string, unknown>();
  connection.prepare = (sql: string) => statements.get(sql) ?? remember(statements, sql, noticingWrites(prepare(sql)));
  return connection;
}

/**
 * When kept results must be checked against `PRAGMA data_version` again: it moves when a request
 * arrives and after every write statement (COMMIT included) of this process's connections.
 */
let checkEpoch = 0;

/**
 * A request arrived: the next read checks whether anything was committed since (by this process or
 * another, such as the svc CLI). Reads of one request, concurrent with any commit, may share a check.
 */
export function noteRequestArrival(): void {
  checkEpoch += 1;
}

/** A write statement (better-sqlite3 `reader === false`) moves the check epoch after it runs. */
function noticingWrites<Statement>(statement: Statement): Statement {
  const writable = statement as Statement & { reader?: boolean; run?: (...params: unknown[]) => unknown };
  if (writable.reader !== false || typeof writable.run !== 'function') return statement;
  const run = writable.run.bind(statement);
  writable.run = (...params: unknown[]) => {
    try {
      return run(...params);
    } finally {
      checkEpoch += 1;
    }
  };
  return statement;
}

interface PreparedRead {
  statement: Database.Statement<SqlValue[], unknown[]>;
  rowOf: (values: unknown[]) => unknown;
}

/**
 * Builds one statement's rows from its values: one object literal, so every row has the same shape.
 * better-sqlite3 builds row objects in C++ one property at a time, at twice the cost (pnpm bench).
 */
function rowFactory(columns: readonly string[]): (values: unknown[]) => unknown {
  const properties = columns.map((name, index) => `${JSON.stringify(name)}: values[${index}]`);
  return new Function('values', `return { ${properties.join(', ')} };`) as (values: unknown[]) => unknown;
}

/**
 * Rows kept until the database changes (~1 KB each for a product), the oldest results going first
 * past this many: the product reads of a busy catalog (a page is 26 rows), tokens and categories.
 */
const KEPT_ROWS = 20_000;

/**
 * A second SQLite connection for the hot reads (the bearer token's context, a product, a page),
 * read-only, opened on first use. In WAL mode it reads the last committed state, never the writer
 * connection's open transaction, and it runs synchronously: no pool, no query builder.
 *
 * It also keeps results while nothing is committed: `PRAGMA data_version` changes on this
 * connection whenever any other connection commits (the service's writer, or another process such
 * as the `svc` CLI), and then every kept result is dropped. It is read again (~9 µs) after every
 * write of this process and when a request arrives: a read never answers from before a commit of
 * this process, nor from before another process's commit that preceded the request.
 */
class SqliteReader {
  private connection: Database.Database | undefined;
  private dataVersion: Database.Statement<[], number> | undefined;
  private readonly reads = new Map<string, PreparedRead>();
  private readonly results = new Map<string, readonly unknown[]>();
  private keptRows = 0;
  private resultsVersion = -1;
  private checkedEpoch = -1;

  constructor(private readonly filename: string) {}

  all<Row>(sql: string, params: readonly SqlValue[]): readonly Row[] {
    const { statement, rowOf } = this.reads.get(sql) ?? remember(this.reads, sql, this.prepare(sql));
    if (this.checkedEpoch !== checkEpoch) {
      this.checkedEpoch = checkEpoch;
      const version = (this.dataVersion as Database.Statement<[], number>).get() as number;
      if (version !== this.resultsVersion) {
        this.forget();
        this.resultsVersion = version;
      }
    }
    const key = `${JSON.stringify(params)}${sql}`;
    const kept = this.results.get(key);
    if (kept) return kept as readonly Row[];
    const rows = statement.all(...params).map(rowOf);
    this.keep(key, rows);
    return rows as readonly Row[];
  }

  private keep(key: string, rows: readonly unknown[]): void {
    if (rows.length > KEPT_ROWS / 10) return;
    this.results.set(key, rows);
    this.keptRows += rows.length;
    for (const [oldest, oldRows] of this.results) {
      if (this.keptRows <= KEPT_ROWS) break;
      this.results.delete(oldest);
      this.keptRows -= oldRows.length;
    }
  }

  private forget(): void {
    this.results.clear();
    this.keptRows = 0;
  }

  private prepare(sql: string): PreparedRead {
    this.connection ??= this.open();
    const statement = this.connection.prepare<SqlValue[], unknown[]>(sql).raw(true);
    return { statement, rowOf: rowFactory(statement.columns().map((column) => column.name)) };
  }

  private open(): Database.Database {
    const connection = new Database(this.filename, { fileMustExist: true });
    connection.pragma('query_only = ON');
    connection.pragma('busy_timeout = 5000');
    this.dataVersion = connection.prepare<[], number>('pragma data_version').pluck();
    return connection;
  }

  close(): void {
    this.connection?.close();
    this.connection = undefined;
    this.dataVersion = undefined;
    this.checkedEpoch = -1;
    this.reads.clear();
    this.forget();
  }
}

const sqliteReaders = new WeakMap<Knex.Client, SqliteReader>();

/** Gives an SQLite database its reader, closed with the database (`db.destroy()`). */
export function attachSqliteReader(db: Knex, filename: string): void {
  const reader = new SqliteReader(filename);
  sqliteReaders.set(db.client, reader);
  const destroy = db.client.destroy.bind(db.client);
  db.client.destroy = (callback?: (error?: unknown) => void) => {
    reader.close();
    return destroy(callback);
  };
}

/**
 * Rows of a hot-path read written as plain SQL (lower-case identifiers, `?` placeholders: the same
 * text on SQLite and PostgreSQL). Outside a transaction SQLite answers through its reader (which may
 * hand the same row objects to several callers: they are read-only), and PostgreSQL through a
 * prepared statement ({@link preparedRows}); inside one, the query goes through knex like any other.
 */
export async function selectRows<Row>(db: Knex | Knex.Transaction, sql: string, params: readonly SqlValue[]): Promise<readonly Readonly<Row>[]> {
  if (db.isTransaction) {
    const result = (await db.raw(sql, params as Knex.RawBinding[])) as Row[] | { rows: Row[] };
    return Array.isArray(result) ? result : result.rows;
  }
  const reader = sqliteReaders.get(db.client);
  return reader ? reader.all<Row>(sql, params) : preparedRows<Row>(db, sql, params);
}

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

/** The part of a pooled node-postgres connection this module uses. */
interface PgConnection {
  query(query: { name: string; text: string; values: readonly SqlValue[] }): Promise<{ rows: unknown[] }>;
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

/**
 * PostgreSQL rows of a hot statement (every request makes it: the bearer token's context, a product,
 * a page), prepared once per connection of the pool and then only bound and run: the server parses
 * and plans it once, and no query builder runs per request (docs/decisions.md, "The PostgreSQL read
 * path"). `sql` takes `?` placeholders with an array, or `:name` bindings with an object. Should a
 * migration change the columns of a prepared statement while the process serves, it is prepared
 * again under a new name.
 */
export async function preparedRows<Row>(db: Knex, sql: string, params: readonly SqlValue[] | Readonly<Record<string, SqlValue>>): Promise<Row[]> {
  const positional = isPositional(params);
  const prepared = preparedTextOf(sql, !positional);
  const values = positional ? params : prepared.bindings.map((name) => params[name] ?? null);
  const report = reportedTo(db, sql, values);
  const connection = (await db.client.acquireConnection()) as PgConnection;
  try {
    const run = () => connection.query({ name: prepared.name, text: prepared.text, values });
    const { rows } = await run().catch((error: unknown) => {
      if (!isStalePlan(error)) throw error;
      statementGeneration += 1;
      prepared.name = statementNameOf(prepared.text);
      return run();
    });
    report?.answered(rows);
    return rows as Row[];
  } catch (error) {
    report?.failed(error);
    throw error;
  } finally {
    db.client.releaseConnection(connection);
  }
}

const isPositional = (params: readonly SqlValue[] | Readonly<Record<string, SqlValue>>): params is readonly SqlValue[] => Array.isArray(params);

/** `(?, ?, ?)` for an `in` list of this many values (at least one: `in ()` is no SQL). */
export function placeholdersFor(values: readonly SqlValue[]): string {
  if (values.length === 0) throw new Error('An in-list needs at least one value');
  return `(${values.map(() => '?').join(', ')})`;
}

/** The AND-ed conditions of a plain-SQL read, with their bound values in order (`and(…)` one at a time). */
export class SqlConditions {
  readonly params: SqlValue[];
  private readonly clauses: string[] = [];

  constructor(...leading: SqlValue[]) {
    this.params = [...leading];
  }

  and(clause: string, ...values: SqlValue[]): this {
    this.clauses.push(clause);
    this.params.push(...values);
    return this;
  }

  /** ` and a = ? and b > ?`: what follows the read's own `where`. */
  get sql(): string {
    return this.clauses.map((clause) => ` and ${clause}`).join('');
  }
}
