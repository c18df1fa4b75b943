import { FIELD_READ_SCOPES, type ScopedSchema } from '@svc/contract';

/**
 * Who reads a resource: the scopes of the token (an answer) or of the installation (a webhook), or
 * `everything` for the copy the outbox keeps, which each receiver is then given as its scopes allow.
 */
export type Reader = ReadonlySet<string> | 'everything';

/** The fields of `schema` that `reader` may not see: the spec's `x-field-scopes` beside them, every scope needed. */
export function hiddenFields(schema: ScopedSchema, reader: Reader): string[] {
  if (reader === 'everything') return [];
  const table: Readonly<Record<string, readonly string[]>> = FIELD_READ_SCOPES[schema];
  return Object.keys(table).filter((field) => !(table[field] ?? []).every((scope) => reader.has(scope)));
}

/** `value` without the fields of `schema` that `reader` may not see (the same object when it sees them all). */
export function visibleTo<T extends object>(schema: ScopedSchema, value: T, reader: Reader): T {
  const hidden = hiddenFields(schema, reader).filter((field) => field in value);
  if (hidden.length === 0) return value;
  return Object.fromEntries(Object.entries(value).filter(([field]) => !hidden.includes(field))) as T;
}
