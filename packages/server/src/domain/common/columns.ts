/**
 * How one field of an update body becomes columns: `true` writes its value as it is to the column of
 * the same name (allowed only where the types agree); a function answers the columns it sets (another
 * name, a stored form, a looked-up id, or several columns).
 */
type FieldColumns<Body, Columns, Field extends keyof Body> =
  | (Field extends keyof Columns ? (Exclude<Body[Field], undefined> extends Columns[Field] ? true : never) : never)
  | ((value: Exclude<Body[Field], undefined>) => Partial<Columns> | Promise<Partial<Columns>>);

/** One entry per field of the body: a field the spec adds to an update fails `tsc` here until it is given its columns. */
export type UpdateColumns<Body, Columns> = { readonly [Field in keyof Body]-?: FieldColumns<Body, Columns, Field> };

/**
 * The columns an update body changes, in the write path's `columns` step: a field left out stays as
 * it is, a field sent (null included: null clears) is written through its entry.
 */
export async function sentColumns<Body extends object, Columns extends object>(body: Body, fields: UpdateColumns<Body, Columns>): Promise<Partial<Columns>> {
  const columns: Partial<Columns> = {};
  for (const field of Object.keys(fields) as (keyof Body & string)[]) {
    const value = body[field];
    if (value === undefined) continue;
    const entry = fields[field] as true | ((value: unknown) => Partial<Columns> | Promise<Partial<Columns>>);
    Object.assign(columns, entry === true ? { [field]: value } : await entry(value));
  }
  return columns;
}
