import { randomBytes } from 'node:crypto';
import { createDatabase } from '../../packages/server/src/db/connection';
import type { Knex } from './fixtures';
import { fixed, printTable } from './report';

/**
 * What each statement costs, from `pg_stat_statements`: the bench runs under a login role made for
 * the run (its own schema, owned by it), so that its statements are told apart from every other
 * client of the server by `userid` and `dbid`, and the counters can be reset for it alone before each
 * measured case.
 */
export interface BenchRole {
  /** The bench's database, as the role, in the role's own schema. */
  readonly db: Knex;
  /** The role's URL (its user and password) on the bench's server. */
  readonly url: string;
  /** Resets the role's statement counters (before a measured case). */
  reset(): Promise<void>;
  /** The role's statements since the last reset, the costliest first. */
  top(limit: number): Promise<StatementCost[]>;
  /** Drops the schema and the role. */
  drop(): Promise<void>;
}

export interface StatementCost {
  readonly query: string;
  readonly calls: number;
  readonly totalMs: number;
  readonly meanMs: number;
  readonly rows: number;
  readonly walBytes: number;
}

/** Opens the bench as a fresh role; throws, saying why, where `pg_stat_statements` is not loaded. */
export async function openBenchRole(url: string, prefix: string): Promise<BenchRole> {
  const admin = createDatabase({ databaseUrl: url, dataDir: '' });
  const suffix = randomBytes(6).toString('hex');
  const role = `${prefix}_${suffix}`;
  const password = randomBytes(18).toString('base64url');
  try {
    await admin.raw('create extension if not exists pg_stat_statements');
    const { rows } = (await admin.raw(`select extnamespace::regnamespace::text as schema from pg_extension where extname = 'pg_stat_statements'`)) as {
      rows: { schema: string }[];
    };
    const schemaOfView = rows[0]?.schema as string;
    await admin.raw(`select 1 from ${schemaOfView}.pg_stat_statements limit 1`);
    await admin.raw(`create role ?? login password '${password}'`, [role]);
    await admin.raw('create schema ?? authorization ??', [role, role]);
    const asRole = new URL(url);
    asRole.username = role;
    asRole.password = password;
    const db = createDatabase({ databaseUrl: asRole.toString(), dataDir: '' }, { pgSchema: role });
    const ids = `(select oid from pg_roles where rolname = :role), (select oid from pg_database where datname = current_database())`;
    return {
      db,
      url: asRole.toString(),
      reset: async () => {
        await admin.raw(`select ${schemaOfView}.pg_stat_statements_reset(${ids}, 0)`, { role });
      },
      top: async (limit) => {
        const { rows: statements } = (await admin.raw(
          `select query, calls, total_exec_time, mean_exec_time, rows, wal_bytes from ${schemaOfView}.pg_stat_statements
           where (userid, dbid) = (${ids}) order by total_exec_time desc limit :limit`,
          { role, limit },
        )) as { rows: { query: string; calls: string; total_exec_time: number; mean_exec_time: number; rows: string; wal_bytes: string }[] };
        return statements.map((row) => ({
          query: row.query,
          calls: Number(row.calls),
          totalMs: Number(row.total_exec_time),
          meanMs: Number(row.mean_exec_time),
          rows: Number(row.rows),
          walBytes: Number(row.wal_bytes),
        }));
      },
      drop: async () => {
        await db.destroy();
        await admin.raw('drop schema if exists ?? cascade', [role]);
        await admin.raw('drop role if exists ??', [role]);
        await admin.destroy();
      },
    };
  } catch (error) {
    await admin.destroy();
    throw error;
  }
}

/** A statement on one line, cut to `width` characters. */
const oneLine = (query: string, width: number) => {
  const line = query.replace(/\s+/g, ' ').trim();
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
};

/** Prints a case's costliest statements, with each one's calls per operation of the case. */
export function printStatements(operation: string, count: number, statements: readonly StatementCost[]): void {
  console.log(`\n${operation}: the costliest statements (pg_stat_statements, ${count} operations)`);
  printTable(
    [
      { title: 'total ms', align: 'right' },
      { title: 'calls', align: 'right' },
      { title: 'calls each', align: 'right' },
      { title: 'mean ms', align: 'right' },
      { title: 'rows', align: 'right' },
      { title: 'WAL bytes', align: 'right' },
      { title: 'statement', align: 'left' },
    ],
    statements.map((statement) => [
      fixed(statement.totalMs, 0),
      String(statement.calls),
      fixed(statement.calls / count, 2),
      fixed(statement.meanMs, 3),
      String(statement.rows),
      String(statement.walBytes),
      oneLine(statement.query, 110),
    ]),
  );
}
