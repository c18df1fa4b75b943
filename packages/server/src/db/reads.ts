import Database from 'better-sqlite3';
import type { Knex } from 'knex';
import { preparedRows, type Statement } from './prepared-statements';
import { remember, rowFactory, type SqlValue } from './rows';

export type { SqlValue } from './rows';

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
 * Rows a request read ahead: on PostgreSQL, a bearer request sends its operation's first read in
 * the round trip of its token's statement (docs/decisions/0066-postgresql-read-path.md), and its
 * handler takes the rows from here instead of asking again.
 */
export interface ReadAhead {
  readonly statement: Statement & { readonly params: readonly SqlValue[] };
  readonly rows: readonly unknown[];
}

/** Whether rows read ahead are those of this statement: the same text and the same values. */
function answersStatement(readAhead: ReadAhead, sql: string, params: readonly SqlValue[]): boolean {
  const { statement } = readAhead;
  return statement.sql === sql && statement.params.length === params.length && statement.params.every((value, index) => value === params[index]);
}

/**
 * Rows of a hot-path read written as plain SQL (lower-case identifiers, `?` placeholders: the same
 * text on SQLite and PostgreSQL). Outside a transaction SQLite answers through its reader (which may
 * hand the same row objects to several callers: they are read-only), and PostgreSQL through a
 * prepared statement ({@link preparedRows}), or from the rows the request read ahead when they are
 * this statement's; inside one, the query goes through knex like any other.
 */
export async function selectRows<Row>(
  db: Knex | Knex.Transaction,
  sql: string,
  params: readonly SqlValue[],
  readAhead?: ReadAhead,
): Promise<readonly Readonly<Row>[]> {
  if (db.isTransaction) {
    const result = (await db.raw(sql, params as Knex.RawBinding[])) as Row[] | { rows: Row[] };
    return Array.isArray(result) ? result : result.rows;
  }
  if (readAhead && answersStatement(readAhead, sql, params)) return readAhead.rows as readonly Readonly<Row>[];
  const reader = sqliteReaders.get(db.client);
  return reader ? reader.all<Row>(sql, params) : preparedRows<Row>(db, sql, params);
}

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

  /** A condition as knex's `whereRaw` takes it (`[sql, values]`: core/paging's `boundAfter`). */
  bound([clause, values]: readonly [string, readonly SqlValue[]]): this {
    return this.and(clause, ...values);
  }

  /** ` and a = ? and b > ?`: what follows the read's own `where`. */
  get sql(): string {
    return this.clauses.map((clause) => ` and ${clause}`).join('');
  }
}
