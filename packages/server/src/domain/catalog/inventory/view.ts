import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import type { ProductRow } from '../products/row';

export type InventoryItem = components['schemas']['InventoryItem'];
export type InventoryAdjustment = components['schemas']['InventoryAdjustment'];

/*
 * Stock. Physical and service products count `products.quantity` (`manual`); digital products hold
 * units (codes) in `digital_units` and count the unsold ones (`digital_aggregate`).
 */

export type StockRow = Pick<ProductRow, 'id' | 'product_kind' | 'quantity' | 'resource_version' | 'updated_at'>;

export const modeOf = (kind: ProductRow['product_kind']): InventoryAdjustment['mode'] => (kind === 'digital' ? 'digital_aggregate' : 'manual');

/** The stock of a product: its quantity, or for a digital product the units not yet sold; changed when the product last was. */
export function inventoryItemView(row: StockRow, availableUnits: number): InventoryItem {
  const { resource_version } = row;
  const updated_at = toIso(Number(row.updated_at));
  if (row.product_kind === 'digital') {
    return { product_id: row.id, product_kind: 'digital', mode: 'digital_aggregate', available_units: availableUnits, resource_version, updated_at };
  }
  return { product_id: row.id, product_kind: row.product_kind, mode: 'manual', quantity: row.quantity, resource_version, updated_at };
}
