import type { Knex } from 'knex';
import { engineOfHandle, type Statement } from './engine';
import type { SqlValue } from './rows';
import type { Db } from './transactions';

export type { GatedRead, Judged, Statement } from './engine';
export type { SqlValue } from './rows';

/**
 * Rows of a hot-path read written as plain SQL (lower-case identifiers, `?` placeholders: the same
 * text on SQLite and PostgreSQL; or `:name` bindings with an object). Outside a transaction the engine answers it (SQLite through its
 * reader, which may hand the same frozen rows to several callers; PostgreSQL through a statement
 * prepared per connection); inside one, the query goes through knex like any other.
 */
export async function selectRows<Row>(
  db: Db,
  sql: string,
  params: Statement['params'],
  { fresh = false }: Pick<Statement, 'fresh'> = {},
): Promise<readonly Readonly<Row>[]> {
  if (db.isTransaction) {
    const result = (await db.raw(sql, params as Knex.RawBinding[] & Knex.ValueDict)) as Row[] | { rows: Row[] };
    return Array.isArray(result) ? result : result.rows;
  }
  const [rows] = await engineOfHandle(db).reads.select(db as Knex, [{ sql, params, fresh }]);
  return rows as readonly Readonly<Row>[];
}

/** A `:name` binding (not a `::type` cast), as the PostgreSQL engine reads them. */
const NAMED_BINDING = /(?<![:\w]):([a-z_][a-z0-9_]*)/g;

/** A statement's text under a gate, and the gate's bindings in the order its `?` placeholders take them. */
interface GatedText {
  readonly sql: string;
  readonly positionalNames: readonly string[];
}

/**
 * A statement read only while `condition` holds: SQL bound by name (`:token_hash`…) that reads no
 * column of the statement's, so that the planner evaluates it once, before anything else (PostgreSQL's
 * one-time filter: a gate that is shut reads none of the statement's tables). The statement's own
 * rows and order are unchanged; its bindings stay as they were (`?` values, the gate's after them,
 * or `:name` bindings beside the gate's, which must not name one of its own otherwise).
 */
export function readWhile(condition: string): (statement: Statement, bindings: Readonly<Record<string, SqlValue>>) => Statement {
  const texts = new Map<string, GatedText>();
  const textOf = (sql: string, positional: boolean): GatedText => {
    const known = texts.get(sql);
    if (known) return known;
    const positionalNames: string[] = [];
    const gate = positional
      ? condition.replace(NAMED_BINDING, (_match, name: string) => {
          positionalNames.push(name);
          return '?';
        })
      : condition;
    const text = { sql: `select gated.* from (${sql}) gated where ${gate}`, positionalNames };
    texts.set(sql, text);
    return text;
  };
  return ({ sql, params, fresh }, bindings) => {
    const positional = Array.isArray(params);
    const text = textOf(sql, positional);
    const gated = positional
      ? [...(params as readonly SqlValue[]), ...text.positionalNames.map((name) => bindings[name] ?? null)]
      : bindingsBeside(params as Readonly<Record<string, SqlValue>>, bindings);
    return { sql: text.sql, params: gated, ...(fresh === undefined ? {} : { fresh }) };
  };
}

/** A named statement's bindings with the gate's: a name both use must be bound to the same value. */
function bindingsBeside(own: Readonly<Record<string, SqlValue>>, gate: Readonly<Record<string, SqlValue>>): Record<string, SqlValue> {
  for (const [name, value] of Object.entries(gate)) {
    if (Object.hasOwn(own, name) && own[name] !== value) throw new Error(`A gated statement binds :${name} otherwise than its gate`);
  }
  return { ...own, ...gate };
}

/**
 * Rows a request read ahead: an operation's first read, made with the bearer token's statement
 * (http/first-round-trip.ts), handed to the domain read that would have made it. The operation that declared
 * the read is the one that receives its rows: they are never matched to a statement.
 */
export interface ReadAhead {
  readonly rows: readonly unknown[];
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
