import { parse } from 'libpg-query';
import { STORE_TABLES } from '../../src/db/table-classes';

/** The store tables, every one held to the rule. */
export const CHECKED_STORE_TABLES: ReadonlySet<string> = STORE_TABLES;

// The parser's tree (PostgreSQL's own, as JSON): nodes are objects keyed by their type.
type Node = { readonly [key: string]: unknown };
const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null;
const child = (node: unknown, key: string): Node | undefined => (isNode(node) && isNode(node[key]) ? (node[key] as Node) : undefined);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** A relation a scope reads or writes: the table and the name its columns are qualified with. */
interface Relation {
  readonly table: string;
  readonly name: string;
}

interface Scope {
  readonly relations: Relation[];
  readonly conditions: unknown[];
}

/** The relations of a FROM list (joins included, subqueries not: they are scopes of their own) and its join conditions. */
function addFrom(scope: Scope, items: unknown[]): void {
  for (const item of items) {
    const range = child(item, 'RangeVar');
    if (range) {
      const table = String(range.relname);
      scope.relations.push({ table, name: String(child(range, 'alias')?.aliasname ?? table) });
    }
    const join = child(item, 'JoinExpr');
    if (join) {
      addFrom(scope, [join.larg, join.rarg]);
      if (join.quals) scope.conditions.push(join.quals);
    }
  }
}

/** The scope a SELECT, UPDATE or DELETE node opens, or undefined for any other node. */
function scopeOf(type: string, statement: Node): Scope | undefined {
  const scope: Scope = { relations: [], conditions: [] };
  if (type === 'SelectStmt') addFrom(scope, list(statement.fromClause));
  else if (type === 'UpdateStmt')
    addFrom(
      scope,
      [statement.relation, ...list(statement.fromClause)].map((item) => ('relname' in (item as Node) ? { RangeVar: item } : item)),
    );
  else if (type === 'DeleteStmt')
    addFrom(
      scope,
      [statement.relation, ...list(statement.usingClause)].map((item) => ('relname' in (item as Node) ? { RangeVar: item } : item)),
    );
  else return undefined;
  if (statement.whereClause) scope.conditions.push(statement.whereClause);
  return scope;
}

/** The conditions that must all hold (the arguments of ANDs, not of ORs). */
function conjuncts(condition: unknown): unknown[] {
  const bool = child(condition, 'BoolExpr');
  if (bool?.boolop === 'AND_EXPR') return list(bool.args).flatMap(conjuncts);
  return [condition];
}

/** The relation of the scope whose `store_id` the expression is, if it is one. */
function storeColumnOf(expression: unknown, scope: Scope, checked: Relation[]): Relation | undefined {
  const fields = list(child(expression, 'ColumnRef')?.fields).map((field) => String(child(field, 'String')?.sval ?? '*'));
  if (fields[fields.length - 1] !== 'store_id') return undefined;
  if (fields.length >= 2) return checked.find((relation) => relation.name === fields[fields.length - 2]);
  // Unqualified: PostgreSQL takes it from the one relation of the scope that has it.
  return checked.length === 1 && scope.relations.length === 1 ? checked[0] : undefined;
}

/** The store relations of the scope no condition binds to a store (directly, or through another one's `store_id`). */
function unboundRelations(scope: Scope): Relation[] {
  const checked = scope.relations.filter((relation) => CHECKED_STORE_TABLES.has(relation.table));
  const bound = new Set<Relation>();
  const links: [Relation, Relation][] = [];
  for (const condition of scope.conditions.flatMap(conjuncts)) {
    const expression = child(condition, 'A_Expr');
    if (!expression) continue;
    const operator = list(expression.name).map((part) => child(part, 'String')?.sval)[0];
    const sides = [expression.lexpr, expression.rexpr];
    // A row compared or listed: `(d.store_id, d.id) in ((…), (…))`.
    const columns = sides.map((side) => {
      const row = child(side, 'RowExpr');
      return row ? list(row.args).map((arg) => storeColumnOf(arg, scope, checked)) : [storeColumnOf(side, scope, checked)];
    });
    if (expression.kind === 'AEXPR_IN' || (expression.kind === 'AEXPR_OP_ANY' && operator === '=')) {
      for (const relation of columns[0] ?? []) if (relation) bound.add(relation);
      continue;
    }
    if (expression.kind !== 'AEXPR_OP' || operator !== '=') continue;
    const [left, right] = [columns[0]?.find(Boolean), columns[1]?.find(Boolean)];
    if (left && right) links.push([left, right]);
    else if (left) bound.add(left);
    else if (right) bound.add(right);
  }
  for (let grown = true; grown; ) {
    grown = false;
    for (const [a, b] of links) {
      if (bound.has(a) !== bound.has(b)) {
        bound.add(a);
        bound.add(b);
        grown = true;
      }
    }
  }
  return checked.filter((relation) => !bound.has(relation));
}

/** What an INSERT into a store table breaks: it must name `store_id` among its columns. */
function insertBreach(statement: Node): string | undefined {
  const table = String(child(statement, 'relation')?.relname);
  if (!CHECKED_STORE_TABLES.has(table)) return undefined;
  const columns = list(statement.cols).map((column) => child(column, 'ResTarget')?.name);
  return columns.includes('store_id') ? undefined : `insert into ${table} without store_id`;
}

function breachesIn(value: unknown, breaches: string[]): void {
  if (Array.isArray(value)) {
    for (const item of value) breachesIn(item, breaches);
    return;
  }
  if (!isNode(value)) return;
  for (const [key, node] of Object.entries(value)) {
    if (!isNode(node)) {
      breachesIn(node, breaches);
      continue;
    }
    if (key === 'InsertStmt') {
      const breach = insertBreach(node);
      if (breach) breaches.push(breach);
    }
    const scope = scopeOf(key, node);
    if (scope)
      for (const relation of unboundRelations(scope))
        breaches.push(`${relation.table}${relation.name === relation.table ? '' : ` ${relation.name}`} read or written without a store_id condition`);
    breachesIn(node, breaches);
  }
}

/**
 * What a statement breaks of the rule that every statement on a store table names its store
 * (docs/decisions/0079-keys-led-by-the-store.md): each store table of each SELECT, UPDATE or DELETE
 * (subqueries, CTEs and joins each on their own) must be bound to a store by a condition that must
 * hold (`x.store_id = …`, `x.store_id in (…)`, `= any(…)`, or `x.store_id = y.store_id` with `y`
 * bound); each INSERT into one must list `store_id`. Parsed by PostgreSQL's own parser (libpg-query).
 */
export async function storeIdBreaches(sql: string): Promise<string[]> {
  const tree = await parse(sql);
  const breaches: string[] = [];
  breachesIn(tree, breaches);
  return breaches;
}
