import type { Knex } from 'knex';
import { engineOfHandle } from '../../src/db/engine';
import { poolUsageOf } from '../../src/db/pool';
import { clientInternalsOf, outermostOf, settledOf } from '../../src/db/sqlite/internals';
import { testDatabases } from '../support/databases';

/**
 * What the engines take from knex and the drivers beyond their documented API
 * (db/postgres/internals.ts, db/sqlite/internals.ts, db/pool.ts, db/engine.ts): pinned here, so that
 * an upgrade that moves one fails in this suite rather than in production. The prepared
 * statements' wire protocol and the retiring of ended sessions are pinned by
 * prepared-statements.test.ts.
 */
describe.each(testDatabases())('library internals the engine relies on, on $name', (testDatabase) => {
  let db: Knex;

  beforeAll(async () => {
    db = await testDatabase.open();
  });
  afterAll(() => testDatabase.close());

  it("knex gives a transaction's client, nested ones too, its pool's configuration: the engine is found from any of them", async () => {
    const engine = engineOfHandle(db);
    await db.transaction(async (trx) => {
      expect(engineOfHandle(trx)).toBe(engine);
      await trx.transaction(async (nested) => {
        expect(engineOfHandle(nested)).toBe(engine);
        expect(outermostOf(nested)).toBe(trx);
      });
    });
  });

  it("knex's pool (tarn) counts the connections in use and the acquires waiting", async () => {
    await db.raw('select 1');
    const { pools } = engineOfHandle(db);
    await db.transaction(async () => {
      expect(poolUsageOf(db)).toEqual({ inUse: 1, waiting: 0 });
      expect(pools.usage(db)).toEqual({ inUse: 1, waiting: 0 });
    });
    expect(poolUsageOf(db)).toEqual({ inUse: 0, waiting: 0 });
    expect(pools.usage(db)).toEqual({ inUse: 0, waiting: 0 });
  });

  if (testDatabase.name === 'sqlite') {
    it("knex's transaction settles its execution promise at the commit, and its client makes transactions and runs one query through the wrapped methods", async () => {
      const internals = clientInternalsOf(db);
      expect(typeof internals.transaction).toBe('function');
      expect(typeof internals._query).toBe('function');
      let settled = false;
      await db.transaction(async (trx) => {
        void settledOf(trx).then(() => {
          settled = true;
        });
        await Promise.resolve();
        expect(settled).toBe(false);
      });
      await new Promise((resolve) => setImmediate(resolve));
      expect(settled).toBe(true);
    });
  }
});
