import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';
import { engineOfHandle } from '../../src/db/engine';
import { type Statement, selectRows } from '../../src/db/reads';

/** As the engine runs them outside a transaction (db/postgres/prepared-statements.ts). */
const preparedRows = <Row>(db: Knex, sql: string, params: Statement['params']) => selectRows<Row>(db, sql, params) as Promise<Row[]>;
const preparedRowSets = (db: Knex, statements: readonly Statement[]) => engineOfHandle(db).reads.select(db, statements);

import { describeOnPostgres } from '../support/databases';

/**
 * PostgreSQL's hot statements run as prepared statements of their own (docs/decisions/0066-postgresql-read-path.md):
 * they must answer exactly what the same SQL answers through knex, ask for
 * their row description once per connection, and leave a connection usable after a refusal. A
 * connection whose session PostgreSQL ended is never handed out again, by either path (db/connection).
 */
describeOnPostgres('prepared statements and pooled connections on PostgreSQL', (testDatabase) => {
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

  it('several statements: each answers its own rows, in one round trip once the connection has prepared them all', async () => {
    const statements = [
      { sql: 'select id, count from prepared_sample where id = ? and 2 = 2', params: ['a'] },
      { sql: 'select id from prepared_sample where at >= :floor and 3 = 3 order by id', params: { floor: 5 } },
      { sql: 'select id from prepared_sample where id = ? and 4 = 4', params: ['nothing'] },
    ];
    const separately = [];
    for (const { sql, params } of statements) separately.push(await preparedRows(db, sql, params));
    const sync = jest.spyOn(pg.Connection.prototype as unknown as { sync(): void }, 'sync');
    try {
      expect(await preparedRowSets(db, statements)).toEqual(separately);
      expect(separately).toEqual([[{ id: 'a', count: 3 }], [{ id: 'a' }, { id: 'b' }], []]);
      expect(sync).toHaveBeenCalledTimes(1);
      // A statement this connection has not prepared: each goes alone, and prepares.
      sync.mockClear();
      const fresh = { sql: 'select count(*)::int as n from prepared_sample where 5 = ?', params: [5] };
      expect(await preparedRowSets(db, [statements[0] as (typeof statements)[0], fresh])).toEqual([[{ id: 'a', count: 3 }], [{ n: 3 }]]);
      expect(sync).toHaveBeenCalledTimes(2);
    } finally {
      sync.mockRestore();
    }
  });

  it('a later statement refused fails the run and rolls back the writes of the statements before it; the connection serves on', async () => {
    const write = { sql: 'insert into prepared_sample (id, at, flag) values (?, 1, true) returning id', params: ['rolled back'] };
    const divide = { sql: 'select 1 / ? as quotient', params: [1] };
    expect(await preparedRowSets(db, [write, divide])).toEqual([[{ id: 'rolled back' }], [{ quotient: 1 }]]);
    await db('prepared_sample').where({ id: 'rolled back' }).delete();
    // Both prepared on this connection now: the next run is one round trip, one implicit transaction.
    await expect(preparedRowSets(db, [write, { ...divide, params: [0] }])).rejects.toMatchObject({ code: '22012' });
    expect(await db('prepared_sample').where({ id: 'rolled back' })).toEqual([]);
    expect(await preparedRowSets(db, [{ sql: 'select id from prepared_sample where id = ? and 6 = 6', params: ['b'] }, divide])).toEqual([
      [{ id: 'b' }],
      [{ quotient: 1 }],
    ]);
  });

  /** The pid of the backend running the statement whose text holds `marker`, once it shows in pg_stat_activity. */
  async function backendRunning(marker: string): Promise<number> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const { rows } = (await db.raw('select pid from pg_stat_activity where query like ? and pid <> pg_backend_pid()', [`%${marker}%`])) as {
        rows: { pid: number }[];
      };
      if (rows[0]) return rows[0].pid;
    }
    throw new Error(`no backend was seen running ${marker}`);
  }

  it.each([
    ['a prepared run', (sql: string) => preparedRows(db, sql, [])],
    ['a query through knex', async (sql: string) => ((await db.raw(sql)) as { rows: unknown[] }).rows],
  ])('a session PostgreSQL ends mid-statement fails %s at once, and the next statement gets a live connection', async (_name, run) => {
    const marker = `ended_session_${randomUUID().replace(/-/g, '')}`;
    const running = run(`select pg_sleep(30) as ${marker}`);
    running.catch(() => {}); // awaited below, once its backend is gone
    await db.raw('select pg_terminate_backend(?)', [await backendRunning(marker)]);
    await expect(running).rejects.toMatchObject({ code: '57P01' });
    // Before the fix, the pool handed the dying connection on: "Connection terminated unexpectedly".
    expect(await run('select 1 as alive')).toEqual([{ alive: 1 }]);
  });
});
