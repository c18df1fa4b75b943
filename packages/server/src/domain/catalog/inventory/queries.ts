import { BY_ID, boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, walkOrder } from '../../../core/paging';
import type { Db } from '../../../db/transactions';
import { getProduct } from '../products/queries';
import type { ProductRow } from '../products/row';
import { type InventoryItem, inventoryItemView, type StockRow } from './view';

export const unsoldUnits = (db: Db, storeId: string) => db('digital_units').where({ store_id: storeId }).whereNull('delivered_at');

/** Unsold units per digital product among `rows` (one grouped query on the `(store_id, product_id, delivered_at)` index). */
async function availableUnitsOf(db: Db, storeId: string, rows: readonly StockRow[]): Promise<Map<number, number>> {
  const digital = rows.filter((row) => row.product_kind === 'digital').map((row) => row.id);
  if (digital.length === 0) return new Map();
  const counts: Array<{ product_id: number | string; units: number | string }> = await unsoldUnits(db, storeId)
    .whereIn('product_id', digital)
    .groupBy('product_id')
    .select('product_id')
    .count({ units: '*' });
  return new Map(counts.map((count) => [Number(count.product_id), Number(count.units)]));
}

export async function countUnsold(db: Db, storeId: string, productId: number): Promise<number> {
  const [count] = await unsoldUnits(db, storeId).where({ product_id: productId }).count({ units: '*' });
  return Number(count?.units ?? 0);
}

const STOCK_COLUMNS = ['id', 'product_kind', 'quantity', 'resource_version'] as const;

/** `inventory.list`: the stock of the store's products by ascending id, one keyset page. */
export function listInventory(db: Db, storeId: string, request: ListRequest): Promise<Page<InventoryItem>> {
  const read = (after: KeysetAfter | undefined, take: number) => {
    const query = db<ProductRow>('products')
      .where({ store_id: storeId })
      .select(...STOCK_COLUMNS)
      .orderByRaw(walkOrder(BY_ID))
      .limit(take);
    return after === undefined ? query : query.andWhereRaw(...boundAfter(BY_ID, after));
  };
  return keysetPage(request, { list: 'inventory.list', storeId, filters: {} }, BY_ID, read, async (rows) => {
    const units = await availableUnitsOf(db, storeId, rows);
    return rows.map((row) => inventoryItemView(row, units.get(row.id) ?? 0));
  });
}

/** `inventory.get`: the product's stock, or 404. */
export async function getInventoryItem(db: Db, storeId: string, id: number): Promise<InventoryItem> {
  const row = await getProduct(db, storeId, id);
  return inventoryItemView(row, row.product_kind === 'digital' ? await countUnsold(db, storeId, row.id) : 0);
}
