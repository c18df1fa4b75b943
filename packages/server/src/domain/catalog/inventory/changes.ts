import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { toIso } from '../../../core/clock';
import { ApiError, invalidBodyField } from '../../../core/errors';
import { MAX_ROW_ID } from '../../../core/ids';
import { type Db, insertedId } from '../../../db/transactions';
import { type Actor, anyVersion, eventBy } from '../../common/actor';
import type { ColumnsAndResult } from '../../common/versioned';
import { changeProductWithResult } from '../products/changes';
import type { ProductColumns, ProductRecord, ProductRow } from '../products/row';
import { countUnsold, unsoldUnits } from './queries';
import { type InventoryAdjustment, modeOf } from './view';

export type InventoryAdjustmentCreate = components['schemas']['InventoryAdjustmentCreate'];

/** What an `integer` column holds: a manual stock may not grow past it. */
const MAX_QUANTITY = MAX_ROW_ID;

/** The detail is also the message: it says what to send instead. */
const invalid = (field: string, message: string) => invalidBodyField(field, message, message);

/** The body's `codes` rules (InventoryAdjustmentCreate): digital only, as many as a positive delta, none with a negative one. */
function checkCodes(kind: ProductRow['product_kind'], { delta, codes }: InventoryAdjustmentCreate): void {
  if (kind !== 'digital') {
    if (codes !== undefined) throw invalid('/codes', `codes are for digital products only; this product is ${kind}`);
    return;
  }
  if (delta < 0 && codes !== undefined) throw invalid('/codes', 'leave codes out with a negative delta: the oldest unsold units are withdrawn');
  if (delta > 0 && codes?.length !== delta) throw invalid('/codes', `a positive delta on a digital product comes with as many codes as delta (${delta})`);
}

function insufficientStock(stock: number, delta: number): ApiError {
  return new ApiError('INSUFFICIENT_STOCK', `Only ${stock} units are in stock; a delta of ${delta} would take the stock below zero.`, {
    details: [{ location: 'body', field: '/delta', message: `is below -${stock}, the stock on hand` }],
  });
}

/** The stock before the change, with the row locked: the quantity, or the unsold units of a digital product. */
async function stockOf(trx: Knex.Transaction, storeId: string, product: ProductRecord): Promise<number> {
  return product.product_kind === 'digital' ? countUnsold(trx, storeId, product.id) : product.quantity;
}

/** A digital product's oldest unsold units, withdrawn (the row lock makes concurrent withdrawals count one after another). */
async function withdrawUnits(trx: Knex.Transaction, storeId: string, productId: number, count: number): Promise<void> {
  const oldest = unsoldUnits(trx, storeId).where({ product_id: productId }).orderBy('id').limit(count).select('id');
  const withdrawn = await trx('digital_units').whereIn('id', oldest).delete();
  if (withdrawn !== count) throw insufficientStock(withdrawn, -count);
}

/**
 * `inventory.adjust`: changes the product's stock by `delta` (409 INSUFFICIENT_STOCK below zero),
 * adds a digital product's codes as units or withdraws its oldest unsold ones, records the
 * adjustment, and writes `inventory.adjusted` and `product.updated`: one change of the product on
 * the write path (the spec takes no If-Match: any version), in the request's transaction.
 */
export async function adjustInventory(db: Db, actor: Actor, id: number, request: InventoryAdjustmentCreate): Promise<InventoryAdjustment> {
  const { result } = await changeProductWithResult(
    db,
    actor,
    id,
    anyVersion,
    async (current, trx): Promise<ColumnsAndResult<Partial<ProductColumns>, InventoryAdjustment>> => {
      checkCodes(current.product_kind, request);
      const { delta } = request;
      const before = await stockOf(trx, actor.storeId, current);
      if (before + delta < 0) throw insufficientStock(before, delta);
      if (before + delta > MAX_QUANTITY) throw invalid('/delta', `would take the stock above ${MAX_QUANTITY}`);
      const stored = {
        store_id: actor.storeId,
        product_id: current.id,
        delta,
        reason: request.reason,
        note: request.note ?? null,
        quantity_before: before,
        quantity_after: before + delta,
        created_at: actor.now,
      };
      const adjustmentId = insertedId(await trx('inventory_adjustments').insert(stored).returning('id'));
      if (current.product_kind === 'digital' && delta < 0) await withdrawUnits(trx, actor.storeId, current.id, -delta);
      if (request.codes !== undefined) {
        await trx('digital_units').insert(
          request.codes.map((code) => ({
            store_id: actor.storeId,
            product_id: current.id,
            code,
            adjustment_id: adjustmentId,
            delivered_at: null,
            created_at: actor.now,
          })),
        );
      }
      const adjustment: InventoryAdjustment = {
        id: adjustmentId,
        product_id: current.id,
        mode: modeOf(current.product_kind),
        delta,
        reason: stored.reason,
        note: stored.note,
        quantity_before: before,
        quantity_after: before + delta,
        resource_version: current.resource_version + 1,
        created_at: toIso(actor.now),
      };
      return { columns: current.product_kind === 'digital' ? {} : { quantity: before + delta }, result: adjustment };
    },
    (_changed, adjustment) => [eventBy(actor, 'inventory.adjusted', { adjustment })],
  );
  return result;
}
