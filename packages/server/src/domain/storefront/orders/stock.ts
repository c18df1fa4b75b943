import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { ApiError } from '../../../core/errors';
import { lockRows } from '../../../db/locks';
import { adjustInventory } from '../../catalog/inventory/changes';
import { countUnsold, unsoldUnits } from '../../catalog/inventory/queries';
import type { Actor } from '../../common/actor';
import type { OrderItemColumns, OrderItemRow } from './row';

/*
 * Stock and orders (docs/decisions/0037-storefront.md). Physical and service products keep a manual
 * stock: an order takes it through the inventory's own adjustment (`inventory.adjusted`, never below
 * zero) when it is placed, and a cancellation gives it back. Digital products hold units (codes):
 * an order only checks that enough are unsold; the units are assigned when it is paid.
 */

type InventoryAdjustmentReason = components['schemas']['InventoryAdjustmentReason'];

type StockLine = Pick<OrderItemColumns, 'product_id' | 'product_kind' | 'quantity'>;

const hasManualStock = (line: StockLine) => line.product_kind !== 'digital';

const shortOfStock = (index: number, available: number, wanted: number) =>
  new ApiError('INSUFFICIENT_STOCK', `Only ${available} units of the product are in stock; the order wants ${wanted}.`, {
    details: [{ location: 'body', field: `/items/${index}/quantity`, message: `is above ${available}, the stock on hand` }],
  });

/** The inventory adjustment of one manual-stock line; its INSUFFICIENT_STOCK names the order's line. */
async function adjustLine(trx: Knex.Transaction, actor: Actor, line: StockLine, index: number, delta: number, reason: InventoryAdjustmentReason, note: string) {
  try {
    await adjustInventory(trx, actor, line.product_id, { delta, reason, note });
  } catch (error) {
    if (error instanceof ApiError && error.code === 'INSUFFICIENT_STOCK') {
      const available = Number((await trx('products').where({ store_id: actor.storeId, id: line.product_id }).first('quantity'))?.quantity ?? 0);
      throw shortOfStock(index, available, -delta);
    }
    throw error;
  }
}

/** Takes the order's stock: manual stock down (409 below zero), digital units checked unsold. */
export async function takeStock(trx: Knex.Transaction, actor: Actor, reference: string, lines: readonly StockLine[]): Promise<void> {
  for (const [index, line] of lines.entries()) {
    if (hasManualStock(line)) {
      await adjustLine(trx, actor, line, index, -line.quantity, 'sale', `Order ${reference}`);
      continue;
    }
    const available = await countUnsold(trx, actor.storeId, line.product_id);
    if (available < line.quantity) throw shortOfStock(index, available, line.quantity);
  }
}

/** Gives a cancelled order's manual stock back (digital units already delivered stay delivered). */
export async function giveBackStock(trx: Knex.Transaction, actor: Actor, reference: string, lines: readonly StockLine[]): Promise<void> {
  for (const [index, line] of lines.entries()) {
    if (hasManualStock(line)) await adjustLine(trx, actor, line, index, line.quantity, 'correction', `Order ${reference} cancelled`);
  }
}

/**
 * Delivers a paid order's digital lines: each gets exactly `quantity` of the oldest unsold units of
 * its product. The product row is locked first (PostgreSQL `FOR UPDATE`; SQLite has one writer), so
 * two payments for the last unit run one after the other and the second finds none: 409
 * INSUFFICIENT_STOCK, and the payment is refused. A unit is only ever taken while unsold. The
 * product's `available_units` fell, so its `updated_at` moves (an `inventory.list` sync by
 * `updated_since` brings it again); its `resource_version` stays, as no adjustment was made.
 */
export async function deliverDigitalUnits(trx: Knex.Transaction, actor: Actor, items: readonly OrderItemRow[]): Promise<void> {
  for (const [index, item] of items.entries()) {
    if (item.product_kind !== 'digital') continue;
    const product = trx('products').where({ store_id: actor.storeId, id: item.product_id });
    await lockRows(trx, product);
    const units = unsoldUnits(trx, actor.storeId).where({ product_id: item.product_id }).orderBy('id').limit(item.quantity).select('id');
    const delivered = await trx('digital_units')
      .where({ store_id: actor.storeId })
      .whereIn('id', units)
      .whereNull('delivered_at')
      .update({ delivered_at: actor.now, order_id: item.order_id, order_item_id: item.id });
    if (delivered !== item.quantity) throw shortOfStock(index, delivered, item.quantity);
    await trx('products').where({ store_id: actor.storeId, id: item.product_id }).update({ updated_at: actor.now });
  }
}
