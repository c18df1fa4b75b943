/** A bound value of a hot-path read. */
export type SqlValue = string | number | null;

/**
 * Prepared statements and texts kept per connection or process (the oldest dropped beyond this): a
 * process has few SQL texts, as knex generates the same text for the same query shape.
 */
const STATEMENT_CACHE_SIZE = 500;

/** A bounded map: past the bound, the entry added first goes. */
export function remember<Value>(entries: Map<string, Value>, key: string, value: Value): Value {
  if (entries.size >= STATEMENT_CACHE_SIZE) entries.delete(entries.keys().next().value as string);
  entries.set(key, value);
  return value;
}

/**
 * Builds one statement's rows from its values: one object literal, so every row has the same shape.
 * better-sqlite3 builds row objects in C++ one property at a time, at twice the cost (pnpm bench),
 * and node-postgres copies a template object per row.
 */
export function rowFactory(columns: readonly string[]): (values: unknown[]) => unknown {
  const properties = columns.map((name, index) => `${JSON.stringify(name)}: values[${index}]`);
  return new Function('values', `return { ${properties.join(', ')} };`) as (values: unknown[]) => unknown;
}
