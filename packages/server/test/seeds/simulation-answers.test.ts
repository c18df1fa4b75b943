import { installDirectly } from '../../src/oauth/direct-install';
import { seedDemo, simulateDemoActivity } from '../../src/seeds/demo';
import { seedDemoCatalog } from '../../src/seeds/demo-catalog';
import { simulateStore } from '../../src/seeds/simulation/run';
import { testDatabases } from '../support/databases';
import { createTestStore, suiteHarness } from '../support/harness';
import { listen } from '../support/listen';

const NOW = Date.parse('2026-03-01T09:00:00Z');

/**
 * The first start simulates the demo store's history in the server's own process, after it listens.
 * On SQLite every statement runs on the event loop's thread (better-sqlite3 is synchronous), so the
 * server answers only if the simulation hands the thread back between its batches.
 */
describe.each(testDatabases('sqlite'))('the demo simulation on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 } });

  beforeAll(() => {
    h.clock.set(NOW);
  });

  it('answers reads while it runs, and those reads see the batches it has committed', async () => {
    const demo = await seedDemo(h.services);
    if (!demo) throw new Error('The demo seed needs an empty database');
    const storeId = demo.store.id;
    const { access_token: token } = await installDirectly(h.services, {
      storeId,
      appId: demo.app.id,
      scopes: ['products:read', 'orders:read'],
      redirectUri: demo.version.redirectUrls[0] as string,
    });
    const [productId] = await h.db('products').where({ store_id: storeId }).orderBy('id').limit(1).pluck('id');
    const server = await listen(h.app);
    h.atEnd(() => server.close());
    // A product (the hot reads' own connection) and an order page (the query builder, on the one
    // connection the simulation's transactions take turns on).
    const paths = [`/stores/${storeId}/v1/products/${productId}`, `/stores/${storeId}/v1/orders?limit=1`];

    let finished = false;
    const simulation = simulateDemoActivity(h.services, storeId).finally(() => {
      finished = true;
    });
    const reads: Array<{ path: string; status: number; orders: number; beforeTheEnd: boolean }> = [];
    for (let index = 0; !finished; index += 1) {
      const path = paths[index % paths.length] as string;
      const response = await fetch(`${server.origin}${path}`, { headers: { Authorization: `Bearer ${token}` } });
      const body = (await response.json()) as { data: unknown };
      reads.push({ path, status: response.status, orders: Array.isArray(body.data) ? body.data.length : 0, beforeTheEnd: !finished });
    }
    const summary = await simulation;

    expect(summary.orders).toBe(1500);
    const during = reads.filter((read) => read.beforeTheEnd);
    // The first read was sent just after the simulation started: before, it waited for the whole run.
    expect(reads[0]?.beforeTheEnd).toBe(true);
    expect(during.length).toBeGreaterThanOrEqual(4);
    expect(reads.map((read) => read.status)).toEqual(reads.map(() => 200));
    for (const path of paths) expect(during.some((read) => read.path === path)).toBe(true);
    // Orders committed by earlier batches can be read while later ones are still being played.
    expect(during.some((read) => read.orders === 1)).toBe(true);
  }, 180_000);

  it('ends between two batches when its signal is aborted, keeping what it committed', async () => {
    const { store } = await createTestStore(h, 'Stopping Store');
    await seedDemoCatalog(h.services, store.id);
    const controller = new AbortController();
    const stopping = new Error('the process is stopping');
    const progress: number[] = [];
    const run = simulateStore(h.services, {
      storeId: store.id,
      days: 30,
      orders: 400,
      seed: 7,
      signal: controller.signal,
      onProgress: (done) => {
        progress.push(done);
        if (progress.length === 2) controller.abort(stopping);
      },
    });
    await expect(run).rejects.toBe(stopping);
    // No batch began after the abort: what the two batches committed is what the store holds.
    expect(progress).toHaveLength(2);
    const [orders] = await h.db('orders').where({ store_id: store.id }).count({ n: '*' });
    expect(Number(orders?.n)).toBeGreaterThan(0);
    expect(Number(orders?.n)).toBeLessThan(400);
  }, 60_000);
});
