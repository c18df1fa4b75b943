import os from 'node:os';
import type { Knex } from 'knex';
import request from 'supertest';
import { type RunningPgBouncer, startPgBouncer } from '../../../../tools/testbed/pgbouncer';
import { freshPostgresDatabase } from '../../../../tools/testbed/postgres-database';
import { createDatabase } from '../../src/db/connection';
import { engineOfHandle } from '../../src/db/engine';
import { migrateToLatest } from '../../src/db/migrate';
import { createDispatcher } from '../../src/delivery/dispatcher';
import { createServices } from '../../src/services/container';
import { createProductVia, getProductCall, openShop, walkProducts } from '../support/catalog-products';
import type { TestDatabase } from '../support/databases';
import { createTestStore, localOnlyResolver, suiteHarness } from '../support/harness';
import { describeWith, PGBOUNCER } from '../support/requirements';
import { startReceiver } from '../support/webhook-receiver';
import { installSubscriber, subscribe } from '../support/webhooks';

/**
 * The service behind a real PgBouncer 1.18 in transaction mode (docs/decisions/0077-behind-a-transaction-pooler.md):
 * DATABASE_URL goes through the pooler, DATABASE_DIRECT_URL to PostgreSQL itself. Each transaction
 * may land on another server connection, so no named statement, session setting or session lock
 * may be relied on there: the hot statements run unnamed, and LISTEN and the advisory locks use a
 * session of their own. Every statement any pool ran is watched: none may fail.
 */
describeWith(PGBOUNCER, 'the service behind PgBouncer in transaction mode', () => {
  const adminUrl = process.env.TEST_DATABASE_URL as string;
  let bouncer: RunningPgBouncer;
  let database: { url: string; drop: () => Promise<void> };
  const pools: Knex[] = [];
  const failures: unknown[] = [];

  const openPooled = async (): Promise<Knex> => {
    const db = createDatabase({
      databaseUrl: bouncer.pooledUrlOf(database.url),
      dataDir: os.tmpdir(),
      database: { directUrl: database.url, poolMax: 4, statementTimeoutMs: 30_000 },
    });
    db.on('query-error', (error: unknown) => failures.push(error));
    pools.push(db);
    return db;
  };
  const pooled: TestDatabase = {
    name: 'postgres',
    open: openPooled,
    openAnother: openPooled,
    close: async () => {
      await Promise.all(pools.map((db) => db.destroy()));
      await bouncer?.stop();
      await database?.drop();
    },
  };

  beforeAll(async () => {
    database = await freshPostgresDatabase(adminUrl);
    bouncer = await startPgBouncer(adminUrl);
  });
  const h = suiteHarness(pooled);

  afterEach(() => {
    expect(failures).toEqual([]);
  });

  it('migrates through the pooler with the migrations lock on a direct session: a second instance at once finds nothing to do', async () => {
    // The harness migrated an empty database already; two more instances race for the lock.
    const [first, second] = await Promise.all([openPooled(), openPooled()]);
    expect(await Promise.all([migrateToLatest(first), migrateToLatest(second)])).toEqual([[], []]);
    const { rows } = (await h.db.raw('select count(*)::int as n from knex_migrations')) as { rows: { n: number }[] };
    expect(rows[0]?.n).toBeGreaterThan(10);
  });

  it('answers the store API: writes under Idempotency-Key, the token check with its quota and first read in one round trip, pages', async () => {
    const shop = await openShop(h);
    const created = [];
    for (let index = 0; index < 30; index += 1) {
      created.push((await createProductVia(h.app, shop.storeId, shop.tokens.full, { name: `Pooled oud ${index}` })).product);
    }
    for (const product of created.slice(0, 10)) {
      const got = await getProductCall(h.app, shop.storeId, shop.tokens.full, product.id);
      expect({ status: got.status, name: got.body.data?.name }).toEqual({ status: 200, name: product.name });
    }
    const { products, pages } = await walkProducts(h.app, shop.storeId, shop.tokens.full, { limit: 7 });
    expect(pages).toBe(5);
    expect(products.map((product) => product.name)).toEqual(created.map((product) => product.name));
    // Readiness says the instance is pooled.
    const ready = await request(h.app).get('/readyz');
    expect({ status: ready.status, database: ready.body.database }).toEqual({ status: 200, database: { pooled: true, replicas: [] } });
  });

  it('delivers webhooks: the dispatcher hears commits on its direct session and claims through the pooler', async () => {
    const receiver = await startReceiver();
    h.atEnd(() => receiver.close());
    const store = await createTestStore(h);
    const subscriber = await installSubscriber(h, store, ['products:read']);
    const writer = await installSubscriber(h, store, ['products:read', 'products:write']);
    const path = '/hooks/pooled';
    receiver.answer(path, 204);
    await subscribe(h, store.store.id, subscriber, { endpoint_url: receiver.url(path), event_types: ['product.created'] });
    const services = createServices({
      db: h.db,
      engine: engineOfHandle(h.db),
      clock: h.clock,
      rateLimits: { perInstallation: 1000, perClient: 1000 },
      webhooks: { environment: 'test', resolve: localOnlyResolver },
    });
    // A poll that never comes: only the commits' notifications, heard on the direct session, wake it.
    const dispatcher = createDispatcher(services, { pollMs: 3_600_000 });
    dispatcher.start();
    try {
      for (let index = 0; index < 5; index += 1) {
        await createProductVia(h.app, store.store.id, writer.token, { name: `Announced ${index}` });
        const deadline = Date.now() + 20_000;
        while (receiver.receivedAt(path).length < index + 1) {
          if (Date.now() > deadline) throw new Error(`delivery ${index + 1} did not arrive`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    } finally {
      await dispatcher.stop();
    }
    expect(receiver.receivedAt(path)).toHaveLength(5);
  });
});
