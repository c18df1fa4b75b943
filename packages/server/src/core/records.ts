/**
 * The record's own value at `key`, never one inherited from `Object.prototype`: a key that comes from
 * a request (a body field, a query or header name) may be `constructor`, `toString` or `__proto__`,
 * which a plain `record[key]` answers with a function or with the prototype itself.
 */
export function ownValue<V>(record: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * An object without a prototype, for records keyed by names a request chose: writing `__proto__`
 * to it makes a property like any other instead of replacing the prototype.
 */
export const emptyRecord = <V>(): Record<string, V> => Object.create(null) as Record<string, V>;

/** Rows grouped by the id `keyOf` gives, each group in the order the rows came (a page's lines by their parent). */
export function groupedBy<Row, Key = number>(rows: readonly Row[], keyOf: (row: Row) => Key): Map<Key, Row[]> {
  const groups = new Map<Key, Row[]>();
  for (const row of rows) {
    const key = keyOf(row);
    const group = groups.get(key);
    if (group) group.push(row);
    else groups.set(key, [row]);
  }
  return groups;
}
