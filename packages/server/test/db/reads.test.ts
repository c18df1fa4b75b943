import Database from 'better-sqlite3';
import type { Knex } from 'knex';
import { createDatabase } from '../../src/db/connection';
import { engineOfHandle } from '../../src/db/engine';
import { readWhile, selectRows } from '../../src/db/reads';
import { testDatabases } from '../support/databases';

const READ = 'select id, label from read_probe where id = ?';
const labelOf = async (db: Knex | Knex.Transaction, id: number) => (await selectRows<{ id: number; label: string }>(db, READ, [id]))[0]?.label;

describe.each(testDatabases())('hot-path reads (selectRows) on $name', (testDatabase) => {
  let db: Knex;

  beforeAll(async () => {
    db = await testDatabase.open();
    await db.schema.createTable('read_probe', (table) => {
      table.integer('id').primary();
      table.string('label').notNullable();
    });
    await db('read_probe').insert([
      { id: 1, label: 'one' },
      { id: 2, label: 'two' },
    ]);
  });
  afterAll(() => testDatabase.close());

  it('reads rows as plain objects by their column names, the same text on both databases', async () => {
    expect(await selectRows(db, 'select id, label from read_probe where id > ? order by id', [0])).toEqual([
      { id: 1, label: 'one' },
      { id: 2, label: 'two' },
    ]);
    expect(await selectRows(db, READ, [3])).toEqual([]);
  });

  it('reads several statements together, in order, with `?` values or `:name` bindings (a write with `returning` too on PostgreSQL)', async () => {
    expect(
      await engineOfHandle(db).reads.select(db, [
        { sql: READ, params: [2] },
        { sql: 'select label from read_probe where id = :id or label = :label order by id', params: { id: 1, label: 'two' } },
      ]),
    ).toEqual([[{ id: 2, label: 'two' }], [{ label: 'one' }, { label: 'two' }]]);
  });

  it('reads a gated statement only while its gate holds: the same rows in the same order, or none (readWhile, decision 0092)', async () => {
    const whileLabelled = readWhile('exists (select 1 from read_probe where label = :wanted)');
    const positional = { sql: 'select id, label from read_probe where id >= ? order by id desc', params: [1] };
    const named = { sql: 'select id from read_probe where id <= :top order by id', params: { top: 2 } };
    const rowsOf = ({ sql, params }: { sql: string; params: Parameters<typeof selectRows>[2] }) => selectRows(db, sql, params, { fresh: true });
    expect(await rowsOf(whileLabelled(positional, { wanted: 'two' }))).toEqual([
      { id: 2, label: 'two' },
      { id: 1, label: 'one' },
    ]);
    expect(await rowsOf(whileLabelled(positional, { wanted: 'three' }))).toEqual([]);
    expect(await rowsOf(whileLabelled(named, { wanted: 'one' }))).toEqual([{ id: 1 }, { id: 2 }]);
    expect(await rowsOf(whileLabelled(named, { wanted: 'nine' }))).toEqual([]);
    // The gate's values follow the statement's, in the order its text names them.
    expect(whileLabelled(positional, { wanted: 'two' }).params).toEqual([1, 'two']);
    expect(() => whileLabelled({ sql: named.sql, params: { top: 2, wanted: 'x' } }, { wanted: 'y' })).toThrow(
      'A gated statement binds :wanted otherwise than its gate',
    );
  });

  it('a judged read: the judgement always, the read only where the judgement allows it (its gate holds, on PostgreSQL)', async () => {
    const whileLabelled = readWhile('exists (select 1 from read_probe where label = :wanted)');
    const read = { sql: 'select label from read_probe where id = ?', params: [1] };
    const judge = (wanted: string) => ({ sql: 'select count(*) as labelled from read_probe where label = :wanted', params: { wanted } });
    const judged = (wanted: string) =>
      engineOfHandle(db).reads.selectJudged(db, judge(wanted), {
        statement: read,
        gated: () => whileLabelled(read, { wanted }),
        allows: async ([row]) => Number((row as { labelled: number | string }).labelled) > 0,
      });
    const open = await judged('two');
    expect(open.read).toEqual([{ label: 'one' }]);
    expect(open.judgement.map((row) => Number((row as { labelled: number | string }).labelled))).toEqual([1]);
    const shut = await judged('three');
    // Not read (SQLite), or read with its gate shut (PostgreSQL): no rows either way.
    expect(shut.read ?? []).toEqual([]);
    expect(shut.judgement.map((row) => Number((row as { labelled: number | string }).labelled))).toEqual([0]);
  });

  it('keeps a read until the next commit, unless it is fresh: its answer depends on a value bound anew (the instant)', async () => {
    const [first] = await selectRows<{ id: number }>(db, READ, [1]);
    const [again] = await selectRows<{ id: number }>(db, READ, [1]);
    const [fresh] = await selectRows<{ id: number }>(db, READ, [1], { fresh: true });
    expect(fresh).toEqual(first);
    if (testDatabase.name === 'sqlite') {
      expect(again).toBe(first); // the same kept row, handed to every caller: frozen, so none can change another's
      expect(Object.isFrozen(first)).toBe(true);
      expect(fresh).not.toBe(first);
    }
  });

  it('reads again after every commit: a repeated read never answers what was there before', async () => {
    expect(await labelOf(db, 1)).toBe('one');
    expect(await labelOf(db, 1)).toBe('one');
    await db('read_probe').where({ id: 1 }).update({ label: 'uno' });
    expect(await labelOf(db, 1)).toBe('uno');
    await db.transaction(async (trx) => {
      await trx('read_probe').where({ id: 1 }).update({ label: 'eins' });
    });
    expect(await labelOf(db, 1)).toBe('eins');
  });

  it("sees a transaction's own writes inside it, and outside it only once committed; nothing of a rollback", async () => {
    await db('read_probe').where({ id: 2 }).update({ label: 'two' });
    expect(await labelOf(db, 2)).toBe('two');
    const inside: (string | undefined)[] = [];
    await db
      .transaction(async (trx) => {
        await trx('read_probe').where({ id: 2 }).update({ label: 'deux' });
        inside.push(await labelOf(trx, 2));
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(inside).toEqual(['deux']);
    expect(await labelOf(db, 2)).toBe('two');
  });

  if (testDatabase.name === 'sqlite') {
    it('reads what another process committed once a request has arrived since (a connection this process does not write through)', async () => {
      const filename = (db.client.config.connection as { filename: string }).filename;
      const elsewhere = new Database(filename);
      try {
        expect(await labelOf(db, 2)).toBe('two');
        elsewhere.prepare('update read_probe set label = ? where id = ?').run('zwei', 2);
        engineOfHandle(db).reads.noteRequestArrival();
        expect(await labelOf(db, 2)).toBe('zwei');
      } finally {
        elsewhere.close();
      }
    });

    it('reads again after another connection commits (another process, such as the svc CLI, on the same file)', async () => {
      const dataDir = (db.client.config.connection as { filename: string }).filename.replace(/\/[^/]+$/, '');
      const other = createDatabase({ databaseUrl: undefined, dataDir });
      try {
        expect(await labelOf(db, 1)).toBe('eins');
        await other('read_probe').where({ id: 1 }).update({ label: 'one again' });
        expect(await labelOf(db, 1)).toBe('one again');
        await other('read_probe').insert({ id: 3, label: 'three' });
        expect(await labelOf(db, 3)).toBe('three');
      } finally {
        await other.destroy();
      }
    });
  }
});
