import Database from 'better-sqlite3';
import type { Express } from 'express';
import type { Knex } from 'knex';
import { createApp } from '../../src/app';
import { ACCESS_SECONDS } from '../../src/core/limits';
import { hashSecret, issueSecret } from '../../src/credentials/secrets';
import { engineOfHandle } from '../../src/db/engine';
import { revokeTokens } from '../../src/platform/tokens';
import { createServices } from '../../src/services/container';
import { getProductCall, listProductsCall, openShop, type Shop, seedProducts, tokenWith } from '../support/catalog-products';
import { type TestDatabase, testDatabases } from '../support/databases';
import { createTestStore, type Harness, localOnlyResolver, suiteHarness } from '../support/harness';
import { CHECKED_STORE_TABLES } from '../support/store-statements';

/**
 * No work for an unjudged token (issue 38 part 6, docs/decisions/0092-no-read-before-the-token.md):
 * a request whose token was never issued (well-formed, checksum valid: anyone can make one), or is
 * expired, revoked or of another store, reads no store table. Before, the
 * operation's first read (products.list's `like` scan, on any store id) ran with the token's
 * statement, before the 401.
 *
 * What was read is taken from the database itself, not from the service's statements: on SQLite
 * every statement either connection ran (better-sqlite3's own), on PostgreSQL the tables' access
 * counters (`pg_stat_user_tables`, of this suite's own schema), read once the server's sessions
 * have ended and so reported them.
 */

/** `\bproducts\b|\borders\b|…`: a statement that names a store table. */
const STORE_TABLE = new RegExp(`\\b(${[...CHECKED_STORE_TABLES].join('|')})\\b`);

/** What the server read of the store tables while `requests` ran: the statements that named one, or the tables it scanned. */
type ReadsOf = (requests: (app: Express) => Promise<void>) => Promise<{ storeReads: string[]; tokenLookups: number }>;

/**
 * SQLite: the SQL of every statement run on any connection of the process (the reader's and the
 * writer's), from better-sqlite3's statements; kept results run none, and read nothing.
 */
function sqliteReads(h: Harness): ReadsOf {
  return async (requests) => {
    const probe = new Database(':memory:');
    const statementClass = Object.getPrototypeOf(probe.prepare('select 1')) as Record<'all' | 'get' | 'run' | 'iterate', (...args: unknown[]) => unknown>;
    probe.close();
    const ran: string[] = [];
    const spies = (['all', 'get', 'run', 'iterate'] as const).map((method) => {
      const original = statementClass[method];
      return jest.spyOn(statementClass, method).mockImplementation(function (this: { source: string }, ...args: unknown[]) {
        ran.push(this.source.replace(/\s+/g, ' ').trim());
        return original.apply(this, args);
      });
    });
    try {
      await requests(h.app);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    return { storeReads: ran.filter((sql) => STORE_TABLE.test(sql)), tokenLookups: ran.filter((sql) => /\bfrom tokens t\b/.test(sql)).length };
  };
}

/** Scans and index scans of each table of the schema (a partition counted as its table), and of `tokens`. */
async function tableScans(admin: Knex): Promise<Map<string, number>> {
  const { rows } = (await admin.raw(`
    select coalesce(parent.relname, t.relname) as table_name, sum(coalesce(t.seq_scan, 0) + coalesce(t.idx_scan, 0))::int as scans
    from pg_stat_user_tables t
    left join pg_inherits i on i.inhrelid = t.relid
    left join pg_class parent on parent.oid = i.inhparent
    where t.schemaname = current_schema()
    group by 1`)) as { rows: { table_name: string; scans: number }[] };
  return new Map(rows.map((row) => [row.table_name, row.scans]));
}

/**
 * PostgreSQL: the requests go to a server of their own pool, closed afterwards (a session reports
 * its table counters at the latest when it ends); then the counters of every store table must not
 * have moved, and those of `tokens` must have (or the counters were not reported yet).
 */
function postgresReads(h: Harness, testDatabase: TestDatabase): ReadsOf {
  return async (requests) => {
    const before = await tableScans(h.db);
    const db = await testDatabase.openAnother();
    const services = createServices({
      db,
      engine: engineOfHandle(db),
      clock: h.clock,
      rateLimits: { perInstallation: 1000, perClient: 1000 },
      webhooks: { environment: 'test', resolve: localOnlyResolver },
    });
    const statements: string[] = [];
    db.on('query', ({ sql }: { sql: string }) => statements.push(sql));
    try {
      await requests(createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services }));
    } finally {
      await db.destroy();
    }
    const tokenStatements = statements.filter((sql) => /\bfrom tokens t\b/.test(sql)).length;
    let after = await tableScans(h.db);
    for (let waited = 0; (after.get('tokens') ?? 0) - (before.get('tokens') ?? 0) < tokenStatements && waited < 15_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await tableScans(h.db);
    }
    if ((after.get('tokens') ?? 0) - (before.get('tokens') ?? 0) < tokenStatements) {
      throw new Error(`The server's sessions did not report their table counters in 15 s (${tokenStatements} statements read tokens)`);
    }
    const moved = [...after].filter(([table, scans]) => CHECKED_STORE_TABLES.has(table) && scans !== (before.get(table) ?? 0));
    return {
      storeReads: moved.map(([table, scans]) => `${table}: ${scans - (before.get(table) ?? 0)} scans`),
      tokenLookups: (after.get('tokens') ?? 0) - (before.get('tokens') ?? 0),
    };
  };
}

describe.each(testDatabases())('a request with a token that does not let it through reads no store data, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let shop: Shop;
  let productId: number;
  let readsOf: ReadsOf;
  /** A search no earlier request made: SQLite's reader keeps results, and a kept result runs no statement. */
  let searches = 0;
  const freshSearch = () => {
    searches += 1;
    return `oud ${searches}`;
  };

  beforeAll(async () => {
    readsOf = testDatabase.name === 'sqlite' ? sqliteReads(h) : postgresReads(h, testDatabase);
    shop = await openShop(h, 'reader');
    const names = Array.from({ length: 40 }, (_, index) => ({ name: `Royal oud ${index}`, status: 'active' as const }));
    [productId] = (await seedProducts(h, shop.storeId, names)) as [number];
  });

  /** A products.list with a `like` search and a products.get of the shop's store, with `token`: their statuses. */
  async function readTheShop(app: Express, token: string): Promise<number[]> {
    const list = await listProductsCall(app, shop.storeId, token, { search: freshSearch(), limit: 50 });
    const get = await getProductCall(app, shop.storeId, token, productId);
    return [list.status, get.status];
  }

  const installationOf = async (token: string) =>
    (
      await h
        .db('tokens')
        .where({ token_hash: hashSecret(token) })
        .first('installation_id')
    ).installation_id as string;

  it.each([
    ['a well-formed token with a valid checksum that was never issued', async () => ({ token: issueSecret('accessToken'), status: 401 })],
    [
      'a revoked token',
      async () => {
        const token = await tokenWith(h, shop.store, ['products:read']);
        await revokeTokens(h.db, { installationId: await installationOf(token) }, h.clock.now(), 'test');
        return { token, status: 401 };
      },
    ],
    ["another store's live token", async () => ({ token: await tokenWith(h, await createTestStore(h, 'Amber House'), ['products:read']), status: 404 })],
  ])('%s: no store table is read', async (_case, tokenOf) => {
    const { token, status } = await tokenOf();
    let statuses: number[] = [];
    const { storeReads, tokenLookups } = await readsOf(async (app) => {
      statuses = await readTheShop(app, token);
    });
    expect(statuses).toEqual([status, status]);
    expect(tokenLookups).toBeGreaterThan(0);
    expect(storeReads).toEqual([]);
  });

  it('an expired token: no store table is read', async () => {
    const expiring = await tokenWith(h, shop.store, ['products:read']);
    h.clock.advance(ACCESS_SECONDS * 1000);
    let statuses: number[] = [];
    const { storeReads } = await readsOf(async (app) => {
      statuses = await readTheShop(app, expiring);
    });
    expect(statuses).toEqual([401, 401]);
    expect(storeReads).toEqual([]);
  });

  it('the check sees a read: a live token reads the products (one round trip on PostgreSQL, read-path.test.ts)', async () => {
    const token = await tokenWith(h, shop.store, ['products:read']);
    let statuses: number[] = [];
    const { storeReads } = await readsOf(async (app) => {
      statuses = await readTheShop(app, token);
    });
    expect(statuses).toEqual([200, 200]);
    expect(storeReads.some((read) => /\bproducts\b/.test(read))).toBe(true);
  });
});
