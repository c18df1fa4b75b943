import type { Knex } from 'knex';
import { migrateToLatest } from '../../src/db/migrate';
import { STORE_TABLES, TABLE_CLASSES } from '../../src/db/table-classes';
import { describeOnPostgres } from '../support/databases';

/** A key of the schema: a primary key, a unique index or a foreign key, with its columns in order. */
interface Key {
  readonly table: string;
  readonly name: string;
  readonly columns: readonly string[];
  /** Foreign keys: the table and columns referred to. */
  readonly target?: { readonly table: string; readonly columns: readonly string[] };
}

/** What a store table's keys break of the rule (docs/decisions/0079-keys-led-by-the-store.md), in words. */
export function breachesOf(table: string, columns: readonly string[], keys: readonly Key[]): string[] {
  const breaches: string[] = [];
  if (!columns.includes('store_id')) breaches.push(`${table} has no store_id`);
  if (!keys.some((key) => key.name.endsWith('_pkey'))) breaches.push(`${table} has no primary key`);
  for (const key of keys) {
    if (key.columns[0] !== 'store_id') breaches.push(`${table}.${key.name} (${key.columns.join(', ')}) does not lead with store_id`);
    const target = key.target;
    if (target && STORE_TABLES.has(target.table) && target.columns[0] !== 'store_id')
      breaches.push(`${table}.${key.name} refers to ${target.table} (${target.columns.join(', ')}) without its store_id`);
  }
  return breaches;
}

async function tablesOf(db: Knex): Promise<Map<string, string[]>> {
  const { rows } = (await db.raw(
    `select c.table_name, c.column_name from information_schema.columns c
     join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
     where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
       and not (select relispartition from pg_class where oid = format('%I.%I', c.table_schema, c.table_name)::regclass)`,
  )) as { rows: { table_name: string; column_name: string }[] };
  const tables = new Map<string, string[]>();
  for (const row of rows) tables.set(row.table_name, [...(tables.get(row.table_name) ?? []), row.column_name]);
  return tables;
}

/** The primary keys and unique indexes (partial and expression ones too), and the foreign keys of the current schema. */
async function keysOf(db: Knex): Promise<Key[]> {
  const { rows: indexes } = (await db.raw(
    `select t.relname as table, i.relname as name,
       array(select coalesce(a.attname::text, '(expression)') from unnest(x.indkey) with ordinality k(attnum, n)
             left join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum order by k.n) as columns
     from pg_index x join pg_class t on t.oid = x.indrelid join pg_class i on i.oid = x.indexrelid
     where t.relnamespace = current_schema()::regnamespace and (x.indisunique or x.indisprimary)`,
  )) as { rows: { table: string; name: string; columns: string[] }[] };
  const { rows: references } = (await db.raw(
    `select t.relname as table, c.conname as name, f.relname as target,
       array(select a.attname::text from unnest(c.conkey) with ordinality k(attnum, n)
             join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum order by k.n) as columns,
       array(select a.attname::text from unnest(c.confkey) with ordinality k(attnum, n)
             join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum order by k.n) as target_columns
     from pg_constraint c join pg_class t on t.oid = c.conrelid join pg_class f on f.oid = c.confrelid
     where c.contype = 'f' and t.relnamespace = current_schema()::regnamespace`,
  )) as { rows: { table: string; name: string; target: string; columns: string[]; target_columns: string[] }[] };
  return [
    ...indexes,
    ...references
      // A store table's reference to a platform table (its store, its installation) is not a key of the store's.
      .filter((reference) => STORE_TABLES.has(reference.target))
      .map((reference) => ({ ...reference, target: { table: reference.target, columns: reference.target_columns } })),
  ];
}

describeOnPostgres('the classes of the tables (sharding by store)', (testDatabase) => {
  let db: Knex;
  beforeAll(async () => {
    db = await testDatabase.open();
    await migrateToLatest(db);
  });
  afterAll(() => testDatabase.close());

  it('classifies every table of the schema, and lists none that is not in it', async () => {
    const tables = [...(await tablesOf(db)).keys()].sort();
    expect(tables.filter((table) => !(table in TABLE_CLASSES))).toEqual([]);
    expect(Object.keys(TABLE_CLASSES).filter((table) => !tables.includes(table))).toEqual([]);
  });

  it('gives every store table store_id, and a primary key, unique indexes and references among store tables led by it', async () => {
    const tables = await tablesOf(db);
    const keys = await keysOf(db);
    const breaches = [...STORE_TABLES].flatMap((table) =>
      breachesOf(
        table,
        tables.get(table) ?? [],
        keys.filter((key) => key.table === table),
      ),
    );
    expect(breaches).toEqual([]);
    // Not vacuous: the store tables are most of the schema.
    expect(STORE_TABLES.size).toBe(25);
  });

  it('names what breaks the rule (the check is not vacuous)', () => {
    expect(
      breachesOf(
        'orders',
        ['id', 'reference'],
        [
          { table: 'orders', name: 'orders_pkey', columns: ['id'] },
          { table: 'orders', name: 'orders_reference_unique', columns: ['reference', 'store_id'] },
          { table: 'orders', name: 'orders_customer_id_foreign', columns: ['store_id', 'customer_id'], target: { table: 'customers', columns: ['id'] } },
        ],
      ),
    ).toEqual([
      'orders has no store_id',
      'orders.orders_pkey (id) does not lead with store_id',
      'orders.orders_reference_unique (reference, store_id) does not lead with store_id',
      'orders.orders_customer_id_foreign refers to customers (id) without its store_id',
    ]);
    expect(breachesOf('pages', ['id', 'store_id'], [])).toEqual(['pages has no primary key']);
  });
});
