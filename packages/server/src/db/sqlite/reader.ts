import Database from 'better-sqlite3';
import { remember, rowFactory, type SqlValue } from '../rows';

/**
 * When kept results must be checked against `PRAGMA data_version` again: it moves when a request
 * arrives and after every write statement (COMMIT included) of the pool's writer connection.
 */
export class CheckEpoch {
  value = 0;

  move(): void {
    this.value += 1;
  }
}

/**
 * The writer connection's `prepare`: it reuses the statement prepared earlier for the same SQL
 * (compiling SQL is most of a simple query's cost, and knex prepares anew for every query), and its
 * write statements move the check epoch (see `noticingWrites`). Reuse is safe: statements are run
 * to completion (`all`/`run`, never a pending `iterate`), and SQLite re-prepares one whose schema
 * changed.
 */
export function cacheStatements<Connection extends { prepare(sql: string): unknown }>(connection: Connection, epoch: CheckEpoch): Connection {
  const prepare = connection.prepare.bind(connection);
  const statements = new Map<string, unknown>();
  connection.prepare = (sql: string) => statements.get(sql) ?? remember(statements, sql, noticingWrites(prepare(sql), epoch));
  return connection;
}

/** A write statement (better-sqlite3 `reader === false`) moves the check epoch after it runs. */
function noticingWrites<Statement>(statement: Statement, epoch: CheckEpoch): Statement {
  const writable = statement as Statement & { reader?: boolean; run?: (...params: unknown[]) => unknown };
  if (writable.reader !== false || typeof writable.run !== 'function') return statement;
  const run = writable.run.bind(statement);
  writable.run = (...params: unknown[]) => {
    try {
      return run(...params);
    } finally {
      epoch.move();
    }
  };
  return statement;
}

interface PreparedRead {
  statement: Database.Statement<unknown[], unknown[]>;
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
 * write of this pool and when a request arrives: a read never answers from before a commit of this
 * process, nor from before another process's commit that preceded the request. A kept result is
 * handed to every caller that asks for it, so its rows are frozen: a caller that changed one would
 * fail at once instead of changing another caller's answer, and a cache keyed by a row (a product's
 * view) may rely on it.
 */
export class SqliteReader {
  private connection: Database.Database | undefined;
  private dataVersion: Database.Statement<[], number> | undefined;
  private readonly reads = new Map<string, PreparedRead>();
  private readonly results = new Map<string, readonly unknown[]>();
  private keptRows = 0;
  private resultsVersion = -1;
  private checkedEpoch = -1;

  constructor(
    private readonly filename: string,
    private readonly epoch: CheckEpoch,
  ) {}

  /** The rows of `sql` bound to `params` (`?` values, or `:name` bindings with an object); kept unless `fresh`. */
  all(sql: string, params: readonly SqlValue[] | Readonly<Record<string, SqlValue>>, fresh: boolean): readonly unknown[] {
    const { statement, rowOf } = this.reads.get(sql) ?? remember(this.reads, sql, this.prepare(sql));
    if (this.checkedEpoch !== this.epoch.value) {
      this.checkedEpoch = this.epoch.value;
      const version = (this.dataVersion as Database.Statement<[], number>).get() as number;
      if (version !== this.resultsVersion) {
        this.forget();
        this.resultsVersion = version;
      }
    }
    const run = () => (Array.isArray(params) ? statement.all(...params) : statement.all(params)).map(rowOf);
    if (fresh) return run();
    const key = `${JSON.stringify(params)}${sql}`;
    const kept = this.results.get(key);
    if (kept) return kept;
    const rows = run();
    this.keep(key, rows);
    return rows;
  }

  private keep(key: string, rows: readonly unknown[]): void {
    if (rows.length > KEPT_ROWS / 10) return;
    for (const row of rows) Object.freeze(row);
    this.results.set(key, Object.freeze(rows));
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
    const statement = this.connection.prepare<unknown[], unknown[]>(sql).raw(true);
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
