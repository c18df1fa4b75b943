import type { Knex } from 'knex';
import { payOrder, placeOrder } from '../../../src/domain/storefront/orders/changes';
import { productRow } from '../../support/catalog-fixtures';
import { describeOnPostgres } from '../../support/databases';
import { suiteHarness } from '../../support/harness';
import { digitalForSale, forSale, openShop, type Shop } from '../../support/storefront-fixtures';

const CONTENDERS = 8;

const settled = async (attempts: Array<Promise<unknown>>) => {
  const results = await Promise.allSettled(attempts);
  return {
    won: results.filter((result) => result.status === 'fulfilled').length,
    refusals: results.flatMap((result) => (result.status === 'rejected' ? [(result.reason as { code?: string }).code] : [])),
  };
};

/** The race needs two connections writing at once: PostgreSQL (SQLite has one writer). */
describeOnPostgres('the last unit under concurrent orders on PostgreSQL', (postgres) => {
  const h = suiteHarness(postgres);
  let second: Knex;
  let shop: Shop;

  beforeAll(async () => {
    second = await postgres.openAnother();
    shop = await openShop(h);
  });

  it('sells the last physical unit once: one order wins, the others are INSUFFICIENT_STOCK, stock ends at zero', async () => {
    const oud = await forSale(h, shop, 1_000, { quantity: 1 });
    const { won, refusals } = await settled(
      Array.from({ length: CONTENDERS }, (_, index) =>
        placeOrder(index % 2 === 0 ? h.db : second, shop.actor(), { customerId: shop.customer.id, items: [{ productId: oud, quantity: 1 }] }),
      ),
    );
    expect(won).toBe(1);
    expect(refusals).toEqual(Array(CONTENDERS - 1).fill('INSUFFICIENT_STOCK'));
    expect((await productRow(h.db, oud)).quantity).toBe(0);
    expect(await h.db('order_items').where({ store_id: shop.storeId, product_id: oud }).count({ n: '*' })).toEqual([{ n: 1 }]);
  });

  it('delivers the last digital unit once: of the paid orders competing for it, one gets it, the others are refused', async () => {
    const cards = await digitalForSale(h, shop, 1_000, ['LAST']);
    const orders = [];
    for (let index = 0; index < CONTENDERS; index += 1) {
      orders.push(await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: cards, quantity: 1 }] }));
    }
    const { won, refusals } = await settled(orders.map((order, index) => payOrder(index % 2 === 0 ? h.db : second, shop.actor(), order.id, { method: 'cod' })));
    expect(won).toBe(1);
    expect(refusals).toEqual(Array(CONTENDERS - 1).fill('INSUFFICIENT_STOCK'));
    const units = await h.db('digital_units').where({ product_id: cards });
    expect(units).toHaveLength(1);
    expect(units[0]?.order_id).not.toBeNull();
    expect(
      await h
        .db('orders')
        .whereIn(
          'id',
          orders.map((order) => order.id),
        )
        .where({ payment_status: 'paid' })
        .count({ n: '*' }),
    ).toEqual([{ n: 1 }]);
  });
});
