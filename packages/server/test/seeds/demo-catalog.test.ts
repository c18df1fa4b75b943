import request from 'supertest';
import { seedCatalogForBench, seedDemoCatalog } from '../../src/seeds/demo-catalog';
import { testDatabases } from '../support/databases';
import { createTestStore, fullAccess, type StoreFixture, suiteHarness } from '../support/harness';
import { walkList, withCursor } from '../support/list-walk';

interface SeededProduct {
  id: number;
  store_id: string;
  name: string;
  slug: string | null;
  category_id: number | null;
  product_kind: string;
  status: string;
  price_state: string;
  price_halalas: number;
  old_price_halalas: number | null;
  quantity: number;
  keywords: string;
  images: string;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;

describe.each(testDatabases())('demo and bench catalogs on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  const productsOf = (storeId: string) => h.db<SeededProduct>('products').where({ store_id: storeId }).orderBy('id');

  /** The store's products as the API shows them, page by page (response validation is on). */
  async function listedThroughApi(store: StoreFixture): Promise<{ id: number }[]> {
    const { tokens } = await fullAccess(h, store);
    const { items } = await walkList<{ id: number }>((cursor) =>
      request(h.app)
        .get(`/stores/${store.store.id}/v1/products`)
        .query(withCursor({ limit: 100 }, cursor))
        .set('Authorization', `Bearer ${tokens.access_token}`),
    );
    return items;
  }

  // test/seeds/seeds.test.ts reads the demo catalog back through the API; this proves the rules row by row.
  test('the demo catalog has eight categories and 300 products of every kind and state that keep the catalog rules', async () => {
    const store = await createTestStore(h);
    const seeded = await seedDemoCatalog(h.services, store.store.id);
    expect(seeded).toEqual({ categories: 8, products: 300, digitalUnits: expect.any(Number) });

    const categories = await h.db('categories').where({ store_id: store.store.id }).orderBy('id').pluck('name');
    expect(categories).toEqual(['Perfumes', 'Oud', 'Bakhoor', 'Gift Sets', 'Dates', 'Coffee', 'Abayas', 'Accessories']);
    const products = await productsOf(store.store.id);
    expect(products).toHaveLength(300);
    for (const product of products) {
      if (product.status === 'active') expect(product.price_state).toBe('ready');
      expect(product.price_state === 'ready').toBe(Number(product.price_halalas) > 0);
      if (product.old_price_halalas !== null) expect(Number(product.old_price_halalas)).toBeGreaterThan(Number(product.price_halalas));
      if (product.product_kind === 'digital') expect(product.quantity).toBe(0);
      expect(product.quantity).toBeGreaterThanOrEqual(0);
      expect(product.slug).toMatch(SLUG);
      const keywords = JSON.parse(product.keywords) as string[];
      expect(new Set(keywords).size).toBe(keywords.length);
      const images = JSON.parse(product.images) as { url: string; is_default: boolean }[];
      expect(images.filter((image) => image.is_default)).toHaveLength(1);
      for (const image of images) expect(image.url).toMatch(/^https:\/\/cdn\.example\.com\//);
      expect(product).toMatchObject({ resource_version: 1, created_at: h.clock.now(), updated_at: h.clock.now() });
    }
    expect(new Set(products.map((product) => product.slug)).size).toBe(300);
    expect(new Set(products.map((product) => product.product_kind))).toEqual(new Set(['physical', 'digital', 'service']));
    expect(new Set(products.map((product) => `${product.status}/${product.price_state}`))).toEqual(
      new Set(['active/ready', 'inactive/ready', 'inactive/required']),
    );
  });

  test('the demo catalog is the same every time, and seeding a store that has a catalog does nothing', async () => {
    const first = await createTestStore(h);
    const second = await createTestStore(h);
    await seedDemoCatalog(h.services, first.store.id, { products: 40, categories: 3 });
    await seedDemoCatalog(h.services, second.store.id, { products: 40, categories: 3 });
    const shape = async (storeId: string) =>
      (await productsOf(storeId)).map(({ name, slug, product_kind, status, price_halalas, quantity, keywords }) => ({
        name,
        slug,
        product_kind,
        status,
        price_halalas,
        quantity,
        keywords,
      }));
    expect(await shape(second.store.id)).toEqual(await shape(first.store.id));

    expect(await seedDemoCatalog(h.services, first.store.id)).toEqual({ categories: 0, products: 0, digitalUnits: 0 });
    expect(await productsOf(first.store.id)).toHaveLength(40);
  });

  test('the bench catalog inserts the count asked for, a second call adds more without slug clashes, and the API serves every row', async () => {
    const store = await createTestStore(h);
    await seedCatalogForBench(h.db, store.store.id, 1200, h.clock.now());
    await seedCatalogForBench(h.db, store.store.id, 300, h.clock.now());
    const products = await productsOf(store.store.id);
    expect(products).toHaveLength(1500);
    expect(new Set(products.map((product) => product.slug)).size).toBe(1500);
    for (const product of products) expect(product.status === 'active' ? product.price_state : 'ready').toBe('ready');
    expect(await listedThroughApi(store)).toHaveLength(1500);
  });
});
