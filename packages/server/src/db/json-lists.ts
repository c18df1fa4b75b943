/** Lists (scopes, URLs) are stored as JSON text, the same on SQLite and PostgreSQL. */
export const toJsonList = (values: readonly string[]): string => JSON.stringify([...values]);

export function fromJsonList(text: string): string[] {
  const value: unknown = JSON.parse(text);
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw new Error('Stored list is not a list of strings');
  return value;
}
