import type { Knex } from 'knex';
import pg from 'pg';
import { preparedRows } from '../../src/db/prepared-statements';
import { testDatabases } from '../support/databases';

/**
 * PostgreSQL's hot statements run as prepared statements of their own (docs/decisions.md, "The
 * PostgreSQL read path"): they must answer exactly what the same SQL answers through knex, ask for
 * their row description once per connection, and leave a connection usable after a refusal.
 */
describe.each(testDatabases('postgres'))('prepared statements on $name', (testDatabase) => {
  let db: Knex;

  beforeAll(async () => {
    db = await testDatabase.open();
    await db.schema.createTable('prepared_sample', (table) => {
      table.text('id').primary();
      table.bigInteger('at').notNullable();
      table.integer('count').nullable();
      table.boolean('flag').notNullable();
      table.jsonb('doc').nullable();
      table.decimal('amount', 12, 2).nullable();
      table.timestamp('stamped', { useTz: true }).nullable();
    });
    await db('prepared_sample').insert([
      { id: 'a', at: 1_764_000_000_123, count: 3, flag: true, doc: JSON.stringify({ k: ['v'] }), amount: '12.50', stamped: new Date('2026-11-27T10:00:00Z') },
      { id: 'b', at: 5, count: null, flag: false, doc: null, amount: null, stamped: null },
      { id: "c'; select 1; --", at: 0, count: -7, flag: true, doc: JSON.stringify('text'), amount: '0.01', stamped: null },
    ]);
  });

  afterAll(() => testDatabase.close());

  const knexRows = async (sql: string, bindings: readonly (string | number)[]) =>
    ((await db.raw(sql, bindings as Knex.RawBinding[])) as { rows: unknown[] }).rows;

  it('answers the rows knex answers for the same SQL: every column type parsed the same way, nulls kept, bound values never part of the text', async () => {
    const sql = 'select * from prepared_sample where id <> ? and at >= ? order by id';
    for (const bindings of [
      ['z', 0],
      ['a', 1],
      ["c'; select 1; --", 0],
    ] as const) {
      expect(await preparedRows(db, sql, bindings)).toEqual(await knexRows(sql, bindings));
    }
    const [row] = await preparedRows<Record<string, unknown>>(db, sql, ['b', 1_000]);
    expect(row).toEqual({
      id: 'a',
      at: 1_764_000_000_123,
      count: 3,
      flag: true,
      doc: { k: ['v'] },
      amount: '12.50',
      stamped: new Date('2026-11-27T10:00:00Z'),
    });
    expect(await preparedRows(db, sql, ['', Number.MAX_SAFE_INTEGER])).toEqual([]);
  });

  it('binds `:name` bindings, one parameter per distinct name', async () => {
    const rows = await preparedRows<{ id: string }>(
      db,
      'select id from prepared_sample where at >= :floor and (count is null or count >= :floor - 10) order by id',
      {
        floor: 0,
      },
    );
    expect(rows.map((row) => row.id)).toEqual(['a', 'b', "c'; select 1; --"]);
  });

  it('asks for a statement’s row description once per connection, then only binds and runs it', async () => {
    const describe = jest.spyOn(pg.Connection.prototype as unknown as { describe(message: unknown): void }, 'describe');
    try {
      const sql = 'select id, count from prepared_sample where id = ? and 1 = 1';
      for (const id of ['a', 'b', 'a', 'z']) await preparedRows(db, sql, [id]);
      const pool = (db.client as { pool: { numFree(): number; numUsed(): number } }).pool;
      // Run one after another, the statements shared one pooled connection.
      expect(pool.numFree() + pool.numUsed()).toBe(1);
      expect(describe).toHaveBeenCalledTimes(1);
      expect(await preparedRows(db, sql, ['b'])).toEqual([{ id: 'b', count: null }]);
      expect(describe).toHaveBeenCalledTimes(1);
    } finally {
      describe.mockRestore();
    }
  });

  it('a statement the server refuses fails with its error, and the connection serves the next one', async () => {
    const backend = async () => (await preparedRows<{ pid: number }>(db, 'select pg_backend_pid() as pid', []))[0]?.pid;
    const before = await backend();
    const sql = 'select id from prepared_sample where count = ?';
    await expect(preparedRows(db, sql, ['not a number'])).rejects.toMatchObject({ code: '22P02' });
    await expect(preparedRows(db, 'select id from prepared_sample where count = 1 / ?', [0])).rejects.toMatchObject({ code: '22012' });
    expect(await preparedRows(db, sql, [3])).toEqual([{ id: 'a' }]);
    await expect(preparedRows(db, 'select no_such_column from prepared_sample', [])).rejects.toMatchObject({ code: '42703' });
    expect(await preparedRows(db, sql, [-7])).toEqual([{ id: "c'; select 1; --" }]);
    // A refused statement leaves its session as it was: the same connection goes on serving.
    expect(await backend()).toBe(before);
  });

  it('a connection lost mid-statement fails its run at once, and the next run gets a live connection', async () => {
    const running = preparedRows(db, 'select pg_sleep(30) as slept, ? as marker', ['lost-connection-run']);
    running.catch(() => {}); // awaited below, once its backend is gone
    let pid: number | undefined;
    const deadline = Date.now() + 10_000;
    while (pid === undefined && Date.now() < deadline) {
      const { rows } = (await db.raw("select pid from pg_stat_activity where query like '%pg_sleep(30)%' and pid <> pg_backend_pid()")) as {
        rows: { pid: number }[];
      };
      pid = rows[0]?.pid;
    }
    if (pid === undefined) throw new Error('the sleeping statement was not seen running');
    await db.raw('select pg_terminate_backend(?)', [pid]);
    await expect(running).rejects.toThrow();
    expect(await preparedRows(db, 'select ? as marker', ['after'])).toEqual([{ marker: 'after' }]);
  });
});
