import pg from 'pg';
import { getProductCall, listProductsCall, openShop, seedProducts } from '../support/catalog-products';
import { describeOnPostgres, testDatabases } from '../support/databases';
import { suiteHarness } from '../support/harness';

/**
 * What a product read costs the database (docs/decisions/0066-postgresql-read-path.md): on
 * PostgreSQL one statement reads the token's context and spends the installation's quota, and one
 * reads the product or the page, gated on the token, in the token's round trip. On SQLite the
 * reads go through the read-only connection and the quota is counted in memory, so no statement
 * goes through the pool.
 */
describe.each(testDatabases())('the round trips of a product read on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  it('products.get and products.list: the token with its quota and the read in one round trip on PostgreSQL, none through the pool on SQLite', async () => {
    const shop = await openShop(h, 'reader');
    const [id] = await seedProducts(h, shop.storeId, [{ name: 'Oud', status: 'active' }]);
    if (id === undefined) throw new Error('a product was seeded');
    const token = shop.tokens.reader;
    // The token's first use notes it, the day's version use is written once, and the connection
    // prepares each statement on its first run: not the steady state.
    expect((await getProductCall(h.app, shop.storeId, token, id)).status).toBe(200);
    expect((await listProductsCall(h.app, shop.storeId, token)).status).toBe(200);
    await h.services.versionUse.written();

    /** The statements and the round trips (Sync messages: one ends each) of a products.get and a products.list. */
    const readBoth = async () => {
      const statements: string[] = [];
      const note = ({ sql }: { sql: string }) => statements.push(sql.replace(/\s+/g, ' ').trim());
      const syncs = jest.spyOn(pg.Connection.prototype as unknown as { sync(): void }, 'sync');
      const roundTrips: number[] = [];
      h.db.on('query', note);
      try {
        const product = await getProductCall(h.app, shop.storeId, token, id);
        expect(product.status).toBe(200);
        expect(product.body.data.name).toBe('Oud');
        roundTrips.push(syncs.mock.calls.length);
        syncs.mockClear();
        expect((await listProductsCall(h.app, shop.storeId, token)).status).toBe(200);
        roundTrips.push(syncs.mock.calls.length);
      } finally {
        h.db.off('query', note);
        syncs.mockRestore();
      }
      return { statements, roundTrips };
    };
    if (testDatabase.name === 'sqlite') {
      expect((await readBoth()).statements).toEqual([]);
      return;
    }
    // A pooled connection that has not prepared a statement yet runs its statements one by one, and
    // the pool may hold more than one connection: the reads go again until they meet a prepared one.
    const attempts: Awaited<ReturnType<typeof readBoth>>[] = [];
    for (let attempt = 0; attempt < 5 && !attempts.some(({ roundTrips }) => roundTrips.join() === '1,1'); attempt += 1) attempts.push(await readBoth());
    for (const { statements } of attempts) {
      const shapes = statements.map((sql) =>
        sql.includes('insert into api_quota_counters') && sql.includes('from tokens t') ? 'token with quota' : sql.includes('from products p') ? 'read' : sql,
      );
      // The read first, gated on the token (docs/decisions/0092-no-read-before-the-token.md): a judgement after it that lets the request through proves the gate was open.
      expect(shapes).toEqual(['read', 'token with quota', 'read', 'token with quota']);
      for (const read of statements.filter((sql) => sql.includes('from products p'))) expect(read).toContain("where t.token_hash = ? and t.kind = 'access'");
    }
    expect(attempts.map(({ roundTrips }) => roundTrips).at(-1)).toEqual([1, 1]);
  });
});

describeOnPostgres('prepared reads on PostgreSQL', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  it('a migration that changes the columns of a prepared read while the process serves: the read is prepared again, no request fails', async () => {
    const shop = await openShop(h, 'reader');
    const [id] = await seedProducts(h, shop.storeId, [{ name: 'Amber', status: 'active' }]);
    if (id === undefined) throw new Error('a product was seeded');
    // Every pooled connection prepares the product read (`select p.*`) before the table changes.
    const before = await Promise.all(Array.from({ length: 8 }, () => getProductCall(h.app, shop.storeId, shop.tokens.reader, id)));
    expect(before.map((response) => response.status)).toEqual(Array(8).fill(200));
    await h.db.schema.alterTable('products', (table) => table.text('added_while_serving'));
    try {
      const after = await Promise.all(Array.from({ length: 8 }, () => getProductCall(h.app, shop.storeId, shop.tokens.reader, id)));
      expect(after.map((response) => response.status)).toEqual(Array(8).fill(200));
      expect(after[0]?.body.data.name).toBe('Amber');
    } finally {
      await h.db.schema.alterTable('products', (table) => table.dropColumn('added_while_serving'));
    }
    expect((await getProductCall(h.app, shop.storeId, shop.tokens.reader, id)).status).toBe(200);
  });
});
