import request from 'supertest';
import { installDirectly } from '../../src/oauth/direct-install';
import { ALL_SCOPES } from '../../src/platform/scopes';
import { seedDemo } from '../../src/seeds/demo';
import { testDatabases } from '../support/databases';
import { suiteHarness } from '../support/harness';

describe.each(testDatabases())('the demo seed on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  it('creates a store with a few hundred products in categories on an empty database, once, and every product reads back valid through the API', async () => {
    const demo = await seedDemo(h.services);
    expect(demo?.catalog).toMatchObject({ products: 300, categories: 8 });
    expect(await seedDemo(h.services)).toBeUndefined();

    const store = demo!.store;
    const tokens = await installDirectly(h.services, {
      storeId: store.id,
      appId: demo!.app.id,
      scopes: [...ALL_SCOPES],
      redirectUri: demo!.version.redirectUrls[0]!,
    });
    const seen: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await request(h.app)
        .get(`/stores/${store.id}/v1/products`)
        .query({ limit: 100, ...(cursor ? { cursor } : {}) })
        .set('Authorization', `Bearer ${tokens.access_token}`);
      expect(page.status).toBe(200); // response validation is on: every seeded product matches the spec
      seen.push(...page.body.data.map((product: { id: number }) => product.id));
      cursor = page.body.meta.next_cursor ?? undefined;
    } while (cursor);
    expect(new Set(seen).size).toBe(300);

    const categories = await request(h.app)
      .get(`/stores/${store.id}/v1/categories`)
      .query({ limit: 100 })
      .set('Authorization', `Bearer ${tokens.access_token}`);
    expect(categories.body.data).toHaveLength(8);
    const active = await request(h.app)
      .get(`/stores/${store.id}/v1/products`)
      .query({ status: 'active', limit: 100 })
      .set('Authorization', `Bearer ${tokens.access_token}`);
    expect(active.body.data.length).toBeGreaterThan(0);
    expect(active.body.data.every((product: { price_state: string }) => product.price_state === 'ready')).toBe(true);
  });
});
