import type { Express } from 'express';
import type { Knex } from 'knex';
import request from 'supertest';
import { type RunningReplica, startReplica } from '../../../../tools/testbed/replica';
import { until } from '../../../../tools/testbed/until';
import { createApp } from '../../src/app';
import { DEFAULT_REPLICA_TIMEOUT_MS } from '../../src/core/config';
import { openReplicas } from '../../src/db/connection';
import { engineOfHandle } from '../../src/db/engine';
import type { ReadReason, ReadReplicas, ServedBy } from '../../src/db/read-routing';
import { createMetrics } from '../../src/runtime/metrics';
import { createServices } from '../../src/services/container';
import { type Metrics, noMetrics } from '../../src/services/metrics';
import { createProductVia, listProductsCall, tokenWith } from '../support/catalog-products';
import { postgresSchema } from '../support/databases';
import { createTestStore, localOnlyResolver, type StoreFixture, suiteHarness } from '../support/harness';
import { walkList, withCursor } from '../support/list-walk';
import { describeWith, REPLICA } from '../support/requirements';

/**
 * Lists and analytics reports on a real streaming replica of the test PostgreSQL (pg_basebackup -R,
 * a postmaster of the test's own), with read-your-writes per installation across instances and the
 * primary whenever the replica lags past the bound or fails (docs/decisions/0078-read-replicas.md).
 */
describeWith(REPLICA, 'read replicas', () => {
  const primaryUrl = process.env.TEST_DATABASE_URL as string;
  /** Short enough that a paused replica turns `lagging` within seconds; long enough for a busy CI machine. */
  const MAX_LAG_MS = 3000;
  /** The replica deadline: the default operators get. */
  const TIMEOUT_MS = DEFAULT_REPLICA_TIMEOUT_MS;
  let replica: RunningReplica;
  const routed: { servedBy: ServedBy; reason: ReadReason }[] = [];
  // What /metrics would serve, and each routing as it happens.
  const prometheus = createMetrics();
  const metrics: Metrics = {
    ...noMetrics,
    routedRead: (servedBy, reason) => {
      routed.push({ servedBy, reason });
      prometheus.routedRead(servedBy, reason);
    },
  };
  const replicasOf = (db: Knex): ReadReplicas =>
    openReplicas(
      { database: { replicaUrls: [replica.url], replicaMaxLagMs: MAX_LAG_MS, replicaTimeoutMs: TIMEOUT_MS } },
      db,
      engineOfHandle(db).pools,
      (line) => lines.push(line),
    );
  const lines: string[] = [];

  beforeAll(async () => {
    replica = await startReplica(primaryUrl);
  }, 120_000);
  afterAll(async () => {
    await replica?.remove();
  });

  const database = postgresSchema(primaryUrl);
  const h = suiteHarness(database, { metrics, replicas: replicasOf });

  /** A second instance of the service on the same database: its own pool, replicas and polls. */
  let other: { app: Express; replicas: ReadReplicas };
  let store: StoreFixture;
  let writer: string;
  let bystander: string;
  let reporter: string;
  let reader: string;
  beforeAll(async () => {
    const db = await database.openAnother();
    const replicas = replicasOf(db);
    const services = createServices({
      db,
      engine: engineOfHandle(db),
      clock: h.clock,
      rateLimits: { perInstallation: 1000, perClient: 1000 },
      webhooks: { environment: 'test', resolve: localOnlyResolver },
      replicas,
      metrics,
    });
    other = { app: createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services }), replicas };
    h.atEnd(() => replicas.close());
    store = await createTestStore(h);
    writer = await tokenWith(h, store, ['products:read', 'products:write']);
    bystander = await tokenWith(h, store, ['products:read', 'products:write']);
    reporter = await tokenWith(h, store, ['analytics:read']);
    reader = await tokenWith(h, store, ['products:read']);
  });

  /** Every product of the store, page by page; every page of one walk is read the same way. */
  const listed = async (app: Express, token: string) => {
    const { items, pages } = await walkList<{ id: number }>((cursor) => listProductsCall(app, store.store.id, token, withCursor({ limit: 100 }, cursor)));
    const consistencies = new Set(pages.map((page) => page.meta.consistency as string));
    expect(consistencies.size).toBe(1);
    return { ids: items.map((product) => product.id), consistency: [...consistencies][0] as string };
  };

  /** Lists until the replica serves the caller (the polls have seen it current and past the caller's writes). */
  const untilServedByReplica = async (app: Express, token: string) => {
    await replica.catchUp();
    const deadline = Date.now() + 20_000;
    for (;;) {
      const page = await listed(app, token);
      if (page.consistency === 'replica_keyset') return page;
      if (Date.now() > deadline) throw new Error('the replica never served the list');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const readyz = async (app: Express) => {
    const response = await request(app).get('/readyz');
    expect(response.status).toBe(200);
    return response.body.database as { pooled: boolean; replicas: { name: string; state: string; lag_ms: number | null }[] };
  };

  it('sees its own writes: a product created then listed at once is in the list, 100 of 100, on either instance', async () => {
    const instances = [h.app, other.app];
    const served: string[] = [];
    for (let index = 0; index < 100; index += 1) {
      const { product } = await createProductVia(instances[index % 2] as Express, store.store.id, writer, { name: `Replica oud ${index}` });
      const page = await listed(instances[(index + 1) % 2] as Express, writer);
      expect(page.ids).toContain(product.id);
      served.push(page.consistency);
    }
    expect(served).toHaveLength(100);
    expect(new Set(served).size).toBeGreaterThanOrEqual(1);
  });

  it('serves lists from the replica once it is current, with the same answer the primary gives', async () => {
    const fromReplica = await untilServedByReplica(h.app, writer);
    routed.length = 0;
    const again = await listed(h.app, writer);
    expect(again).toEqual({ ids: fromReplica.ids, consistency: 'replica_keyset' });
    expect(new Set(routed.map(({ servedBy, reason }) => `${servedBy} ${reason}`))).toEqual(new Set(['replica current']));
    const { rows } = (await h.db.raw('select id from products where store_id = ? order by id', [store.store.id])) as { rows: { id: number }[] };
    expect(fromReplica.ids).toEqual(rows.map((row) => row.id));
    expect(await readyz(h.app)).toEqual({ pooled: false, replicas: [{ name: 'replica-1', state: 'current', lag_ms: expect.any(Number) }] });
    prometheus.watchReplicas(h.services.replicas);
    const scraped = await prometheus.registry.metrics();
    expect(scraped).toMatch(/^svc_db_replica_lag_seconds\{replica="replica-1"\} [0-9.e-]+$/m);
    expect(scraped).toMatch(/^svc_db_replica_serving\{replica="replica-1"\} 1$/m);
    expect(scraped).toMatch(/^svc_db_routed_reads_total\{served_by="replica",reason="current"\} [1-9][0-9]*$/m);
    expect(scraped).toMatch(/^svc_db_routed_reads_total\{served_by="primary",reason="own_write"\} [1-9][0-9]*$/m);
  });

  it('reads every page of a walk where its first page was read: a walk begun on the primary stays there, one on the replica goes on there', async () => {
    const page = (app: Express, token: string, cursor?: string) =>
      listProductsCall(app, store.store.id, token, cursor ? { limit: 10, cursor } : { limit: 10 }).then((response) => {
        expect(response.status).toBe(200);
        return { consistency: response.body.meta.consistency as string, next: response.body.meta.next_cursor as string };
      });
    // The writer's own write sends its first page to the primary…
    await createProductVia(h.app, store.store.id, writer, { name: 'Begins a walk on the primary' });
    const first = await page(h.app, writer);
    expect(first.consistency).toBe('live_keyset');
    // …and once the replica has that write, the walk still goes on on the primary: a replica could
    // lack a row the first page's later neighbours hold.
    await untilServedByReplica(other.app, writer);
    routed.length = 0;
    const second = await page(other.app, writer, first.next);
    expect(second.consistency).toBe('live_keyset');
    expect(routed).toEqual([{ servedBy: 'primary', reason: 'walk' }]);
    // A walk begun on the replica goes on there.
    const onReplica = await page(h.app, writer);
    expect(onReplica.consistency).toBe('replica_keyset');
    expect((await page(other.app, writer, onReplica.next)).consistency).toBe('replica_keyset');
  });

  it('serves analytics reports from the replica', async () => {
    await replica.catchUp();
    await untilServedByReplica(h.app, writer);
    routed.length = 0;
    const response = await request(h.app)
      .get(`/stores/${store.store.id}/v1/analytics/sales`)
      .query({ from: '2026-10-01', to: '2026-10-07' })
      .set('Authorization', `Bearer ${reporter}`);
    expect(response.status).toBe(200);
    expect(response.body.data).toHaveLength(7);
    expect(routed).toEqual([{ servedBy: 'replica', reason: 'current' }]);
  });

  it("misses only others' recent writes on a replica, never the caller's own; past the lag bound the primary serves", async () => {
    await untilServedByReplica(h.app, writer);
    await replica.query('select pg_wal_replay_pause()');
    try {
      // Another installation writes while the replica stands still.
      const { product: theirs } = await createProductVia(h.app, store.store.id, bystander, { name: 'Written by another app' });
      const stale = await listed(h.app, writer);
      expect(stale.consistency).toBe('replica_keyset');
      expect(stale.ids).not.toContain(theirs.id);
      // The bystander's own list waits for its write: the primary serves it.
      routed.length = 0;
      const own = await listed(other.app, bystander);
      expect(own.ids.length).toBeGreaterThan(100);
      expect(own).toEqual({ ids: expect.arrayContaining([theirs.id]), consistency: 'live_keyset' });
      // Its first page for the write, the next ones because the walk began there.
      expect(routed[0]).toEqual({ servedBy: 'primary', reason: 'own_write' });
      expect(new Set(routed.slice(1).map(({ servedBy, reason }) => `${servedBy} ${reason}`))).toEqual(new Set(['primary walk']));
      // The caller writes: from then on its lists need the primary too.
      const { product: mine } = await createProductVia(h.app, store.store.id, writer, { name: 'Written by the caller' });
      const after = await listed(h.app, writer);
      expect(after.consistency).toBe('live_keyset');
      expect(after.ids).toEqual(expect.arrayContaining([theirs.id, mine.id]));
      // The replica stands still while the primary moves on: past the bound it is skipped for everyone.
      const deadline = Date.now() + 20_000;
      while ((await readyz(h.app)).replicas[0]?.state !== 'lagging') {
        if (Date.now() > deadline) throw new Error('the paused replica was never called lagging');
        await createProductVia(h.app, store.store.id, bystander, { name: 'The primary moves on' });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      routed.length = 0;
      // An app that never wrote is served by the primary too, for the lag alone.
      const lagging = await listed(other.app, reader);
      expect(lagging.consistency).toBe('live_keyset');
      expect(routed[0]).toEqual({ servedBy: 'primary', reason: 'lagging' });
    } finally {
      await replica.query('select pg_wal_replay_resume()');
    }
    await untilServedByReplica(h.app, writer);
  });

  it('changes no answer when the replica stops: the primary serves the same lists, then the replica again once it is back', async () => {
    const before = await untilServedByReplica(h.app, writer);
    await replica.stop();
    try {
      routed.length = 0;
      const during = await listed(h.app, writer);
      expect(during).toEqual({ ids: before.ids, consistency: 'live_keyset' });
      // The first page goes to the replica and fails there, or finds it skipped already (a poll
      // met the stop first); the primary answers it either way, and its walk goes on there.
      expect(routed[0]).toEqual({ servedBy: 'primary', reason: expect.stringMatching(/^(failed|unavailable)$/) });
      expect(new Set(routed.slice(1).map(({ servedBy, reason }) => `${servedBy} ${reason}`))).toEqual(new Set(['primary walk']));
      // A new walk finds the replica skipped.
      routed.length = 0;
      await listed(h.app, reader);
      expect(routed[0]).toEqual({ servedBy: 'primary', reason: 'unavailable' });
      for (let index = 0; index < 5; index += 1) expect(await listed(other.app, writer)).toEqual({ ids: before.ids, consistency: 'live_keyset' });
      expect((await readyz(h.app)).replicas).toEqual([{ name: 'replica-1', state: 'unavailable', lag_ms: null }]);
      expect(lines).toContainEqual(expect.stringMatching(/^replica-1 is skipped for the primary: /));
    } finally {
      await replica.start();
    }
    expect(await untilServedByReplica(h.app, writer)).toEqual({ ids: before.ids, consistency: 'replica_keyset' });
    expect(lines).toContain('replica-1 serves reads again');
  });

  it('is slowed by no frozen replica: with its processes stopped, 100 lists answer 200 within the deadline, it shows unavailable, and it serves again once resumed', async () => {
    const before = await untilServedByReplica(h.app, writer);
    // Both instances trust the replica again before it freezes (the test before stopped it): each
    // then says once that it skips it.
    await untilServedByReplica(other.app, writer);
    const scrape = createMetrics();
    scrape.watchReplicas(h.services.replicas);
    routed.length = 0;
    lines.length = 0;
    // Stopped (SIGSTOP) as a frozen host or a partition looks: its sockets stay open, the kernel
    // still accepts connections, and nothing answers; the polls and reads already on it hang.
    replica.freeze();
    const latencies: number[] = [];
    try {
      // Five callers at once, twenty times over, on both instances (the first page of 25 a syncing
      // app reads): the first ones meet the frozen replica and wait out the deadline, the later
      // ones find it skipped.
      for (let round = 0; round < 20; round += 1) {
        await Promise.all(
          Array.from({ length: 5 }, async (_, caller) => {
            const started = performance.now();
            const response = await listProductsCall(caller % 2 === 0 ? h.app : other.app, store.store.id, reader, { limit: 25 });
            latencies.push(performance.now() - started);
            expect(response.status).toBe(200);
            expect(response.body.meta.consistency).toBe('live_keyset');
            expect(response.body.data).toHaveLength(25);
          }),
        );
      }
      // Some went to the replica and were served by the primary past the deadline; each instance
      // skips the replica from the first read or poll that did not answer in time, and says so once.
      expect(routed).toContainEqual({ servedBy: 'primary', reason: 'failed' });
      const skipped = expect.stringMatching(
        new RegExp(`^replica-1 is skipped for the primary: (a read on it|its lag poll) did not answer within ${TIMEOUT_MS} ms$`),
      );
      expect(lines.filter((line) => line.startsWith('replica-1 is skipped'))).toEqual([skipped, skipped]);
      expect((await readyz(h.app)).replicas).toEqual([{ name: 'replica-1', state: 'unavailable', lag_ms: null }]);
      expect((await readyz(other.app)).replicas).toEqual([{ name: 'replica-1', state: 'unavailable', lag_ms: null }]);
      expect(await scrape.registry.metrics()).toMatch(/^svc_db_replica_serving\{replica="replica-1"\} 0$/m);
    } finally {
      replica.thaw();
    }
    latencies.sort((a, b) => a - b);
    // The behaviour: no list waits on the frozen replica past the deadline (then the primary reads),
    // where without one it waited until the replica was resumed or TCP gave up. The bound leaves a
    // deadline's worth for the rest of the request on a loaded CI machine (under 10 ms when quiet);
    // the figure itself, the deadline plus at most 100 ms, is `pnpm drill`'s (docs/performance-log.md).
    expect(latencies).toHaveLength(100);
    expect(latencies[98]).toBeLessThan(2 * TIMEOUT_MS);
    expect(await untilServedByReplica(h.app, writer)).toEqual({ ids: before.ids, consistency: 'replica_keyset' });
    expect(await untilServedByReplica(other.app, writer)).toEqual({ ids: before.ids, consistency: 'replica_keyset' });
    expect(lines).toContain('replica-1 serves reads again');

    // Frozen again with no read to meet it: its lag polls alone find it out, within the deadline.
    lines.length = 0;
    replica.freeze();
    try {
      await until(async () => lines.length === 2, { everyMs: 20 });
      expect(lines).toEqual(Array(2).fill(`replica-1 is skipped for the primary: its lag poll did not answer within ${TIMEOUT_MS} ms`));
      expect((await readyz(h.app)).replicas).toEqual([{ name: 'replica-1', state: 'unavailable', lag_ms: null }]);
    } finally {
      replica.thaw();
    }
    await untilServedByReplica(h.app, writer);
  }, 90_000);

  it('keeps token checks and writes on the primary: a write through an instance with a replica records its position there', async () => {
    const { rows } = (await h.db.raw('select installation_id, wal_lsn::text as wal_lsn from replica_read_positions where store_id = ?', [store.store.id])) as {
      rows: { installation_id: string; wal_lsn: string }[];
    };
    expect(rows.length).toBe(2);
    // Unlogged: it writes no WAL, so a replica has no rows of it to read (and refuses to try).
    const { rows: schema } = (await h.db.raw('select current_schema() as name')) as { rows: { name: string }[] };
    const table = `${schema[0]?.name}.replica_read_positions`;
    const [state] = await replica.query<{ persistence: string }>(`select relpersistence as persistence from pg_class where oid = '${table}'::regclass`);
    expect(state).toEqual({ persistence: 'u' });
    await expect(replica.query(`select count(*) from ${table}`)).rejects.toThrow('cannot access temporary or unlogged relations during recovery');
  });
});
