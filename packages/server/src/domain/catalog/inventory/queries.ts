import { boundAfter, type KeysetAfter, keysetPage, type ListRequest, type Page, syncWalkOf, walkOrder } from '../../../core/paging';
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

const STOCK_COLUMNS = ['id', 'product_kind', 'quantity', 'resource_version', 'updated_at'] as const;

/** The filters of `inventory.list`, as the request gives them. */
export interface InventoryFilters {
  /**
   * Only items whose product has `updated_at` after this instant (RFC 3339): the product's, which
   * moves with its stock too. The walk is then by `(updated_at, id)`.
   */
  updated_since?: string | undefined;
}

/**
 * `inventory.list`: the stock of the store's products by ascending id (given `updated_since`, by
 * the product's `updated_at` and id), one keyset page.
 */
export function listInventory(db: Db, storeId: string, filters: InventoryFilters, request: ListRequest): Promise<Page<InventoryItem>> {
  const { walk, updatedAfter } = syncWalkOf(filters.updated_since);
  const read = (after: KeysetAfter | undefined, take: number) => {
    const query = db<ProductRow>('products')
      .where({ store_id: storeId })
      .select(...STOCK_COLUMNS)
      .orderByRaw(walkOrder(walk))
      .limit(take);
    if (updatedAfter !== undefined) query.andWhere('updated_at', '>', updatedAfter);
    return after === undefined ? query : query.andWhereRaw(...boundAfter(walk, after));
  };
  return keysetPage(request, { list: 'inventory.list', storeId, filters: { ...filters } }, walk, read, async (rows) => {
    const units = await availableUnitsOf(db, storeId, rows);
    return rows.map((row) => inventoryItemView(row, units.get(row.id) ?? 0));
  });
}

/** `inventory.get`: the product's stock, or 404. */
export async function getInventoryItem(db: Db, storeId: string, id: number): Promise<InventoryItem> {
  const row = await getProduct(db, storeId, id);
  return inventoryItemView(row, row.product_kind === 'digital' ? await countUnsold(db, storeId, row.id) : 0);
}
