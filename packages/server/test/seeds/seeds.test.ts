import request from 'supertest';
import { installDirectly } from '../../src/oauth/direct-install';
import { ALL_SCOPES } from '../../src/platform/scopes';
import { seedDemo } from '../../src/seeds/demo';
import { testDatabases } from '../support/databases';
import { suiteHarness } from '../support/harness';
import { walkList, withCursor } from '../support/list-walk';

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
    // Response validation is on: every seeded product matches the spec.
    const { items } = await walkList<{ id: number }>((cursor) =>
      request(h.app)
        .get(`/stores/${store.id}/v1/products`)
        .query(withCursor({ limit: 100 }, cursor))
        .set('Authorization', `Bearer ${tokens.access_token}`),
    );
    expect(new Set(items.map((product) => product.id)).size).toBe(300);

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
