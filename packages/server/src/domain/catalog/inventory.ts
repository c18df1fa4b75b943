import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { toIso } from '../../core/clock';
import { ApiError, type ErrorDetail } from '../../core/errors';
import type { PageInfo } from '../../core/paging';
import { type PageRequest, keysetPage } from '../../core/paging';
import { type Db, inTransaction } from '../../db/transactions';
import { recordEvent } from '../../platform/outbox';
import { type ProductChange, productIdOf, recordProductUpdated, requireProductRow, touchProduct } from './product-media';
import type { ProductRow } from './products';

export type InventoryItem = components['schemas']['InventoryItem'];
export type InventoryAdjustment = components['schemas']['InventoryAdjustment'];
export type InventoryAdjustmentCreate = components['schemas']['InventoryAdjustmentCreate'];
type Mode = InventoryAdjustment['mode'];

/*
 * Stock. Physical and service products count `products.quantity` (`manual`); digital products hold
 * units (codes) in `digital_units` and count the unsold ones (`digital_aggregate`). An adjustment
 * changes the stock, never below zero, raises the product's `resource_version` and writes
 * `inventory.adjusted` and `product.updated`, all in one transaction.
 */

/** What an `integer` column holds: a manual stock may not grow past it. */
const MAX_QUANTITY = 2_147_483_647;

type StockRow = Pick<ProductRow, 'id' | 'product_kind' | 'quantity' | 'resource_version'>;

const modeOf = (kind: ProductRow['product_kind']): Mode => (kind === 'digital' ? 'digital_aggregate' : 'manual');

function itemOf(row: StockRow, availableUnits: number): InventoryItem {
  if (row.product_kind === 'digital') {
    return { product_id: row.id, product_kind: 'digital', mode: 'digital_aggregate', available_units: availableUnits, resource_version: row.resource_version };
  }
  return { product_id: row.id, product_kind: row.product_kind, mode: 'manual', quantity: row.quantity, resource_version: row.resource_version };
}

const unsoldUnits = (db: Db, storeId: string) => db('digital_units').where({ store_id: storeId }).whereNull('delivered_at');

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

async function countUnsold(db: Db, storeId: string, productId: number): Promise<number> {
  const [count] = await unsoldUnits(db, storeId).where({ product_id: productId }).count({ units: '*' });
  return Number(count?.units ?? 0);
}

const STOCK_COLUMNS = ['id', 'product_kind', 'quantity', 'resource_version'] as const;

/** `inventory.list`: the store's products by ascending id, one keyset page. */
export async function listInventory(db: Db, cursorKey: Buffer, now: number, storeId: string, request: PageRequest): Promise<{ items: InventoryItem[]; page: PageInfo }> {
  const { rows, page } = await keysetPage<StockRow>(cursorKey, now, { list: 'inventory.list', storeId, filters: {} }, request, (afterId, take) => {
    const query = db<ProductRow>('products').where({ store_id: storeId }).select(...STOCK_COLUMNS).orderBy('id').limit(take);
    return afterId === undefined ? query : query.andWhere('id', '>', afterId);
  });
  const units = await availableUnitsOf(db, storeId, rows);
  return { items: rows.map((row) => itemOf(row, units.get(row.id) ?? 0)), page };
}

/** `inventory.get`. */
export async function getInventoryItem(db: Db, storeId: string, pathId: string): Promise<InventoryItem> {
  const row = await requireProductRow(db, storeId, productIdOf(pathId));
  return itemOf(row, row.product_kind === 'digital' ? await countUnsold(db, storeId, row.id) : 0);
}

const invalid = (field: string, message: string) => {
  const detail: ErrorDetail = { location: 'body', field, message };
  return new ApiError('VALIDATION_FAILED', message, { details: [detail] });
};

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

/**
 * A manual product's stock in one conditional update (never below zero, race-free under concurrent
 * adjustments); returns the stock before the change and the changed row.
 */
async function adjustQuantity(trx: Knex.Transaction, change: ProductChange, productId: number, delta: number): Promise<{ before: number; row: ProductRow }> {
  const updated = await trx('products')
    .where({ id: productId, store_id: change.storeId })
    .andWhereRaw('quantity + ? between 0 and ?', [delta, MAX_QUANTITY])
    .update({ quantity: trx.raw('quantity + ?', [delta]), resource_version: trx.raw('resource_version + 1'), updated_at: change.now });
  const row = await requireProductRow(trx, change.storeId, productId);
  if (updated === 0) {
    if (delta < 0) throw insufficientStock(row.quantity, delta);
    throw invalid('/delta', `would take the stock above ${MAX_QUANTITY}`);
  }
  return { before: row.quantity - delta, row };
}

/**
 * A digital product's units: the product row is locked first (its version rises), so concurrent
 * adjustments of one product count and withdraw units one after another.
 */
async function adjustUnits(trx: Knex.Transaction, change: ProductChange, productId: number, delta: number): Promise<{ before: number; row: ProductRow }> {
  const row = await touchProduct(trx, change.storeId, productId, change.now);
  const before = await countUnsold(trx, change.storeId, productId);
  if (before + delta < 0) throw insufficientStock(before, delta);
  if (delta < 0) {
    const oldest = unsoldUnits(trx, change.storeId).where({ product_id: productId }).orderBy('id').limit(-delta).select('id');
    const withdrawn = await trx('digital_units').whereIn('id', oldest).delete();
    // Only a sale that marks units delivered without the product's lock could leave fewer to withdraw.
    if (withdrawn !== -delta) throw insufficientStock(withdrawn, delta);
  }
  return { before, row };
}

interface AdjustmentRow {
  id: number;
  store_id: string;
  product_id: number;
  delta: number;
  reason: InventoryAdjustment['reason'];
  note: string | null;
  quantity_before: number;
  quantity_after: number;
  created_at: number;
}

async function insertAdjustment(trx: Knex.Transaction, row: Omit<AdjustmentRow, 'id'>): Promise<number> {
  const [inserted] = (await trx('inventory_adjustments').insert(row).returning('id')) as Array<number | { id: number }>;
  if (inserted === undefined) throw new Error('The adjustment was not inserted');
  return typeof inserted === 'number' ? inserted : inserted.id;
}

/**
 * `inventory.adjust`: changes the product's stock by `delta` (409 INSUFFICIENT_STOCK below zero),
 * adds a digital product's codes as units, records the adjustment and writes `inventory.adjusted`
 * and `product.updated`. Runs in `db`'s transaction (the Idempotency-Key's) or its own.
 */
export async function adjustInventory(db: Db, change: ProductChange, request: InventoryAdjustmentCreate): Promise<InventoryAdjustment> {
  const productId = productIdOf(change.pathId);
  return inTransaction(db, async (trx) => {
    const { product_kind: kind } = await requireProductRow(trx, change.storeId, productId);
    checkCodes(kind, request);
    const { delta } = request;
    const { before, row } = kind === 'digital' ? await adjustUnits(trx, change, productId, delta) : await adjustQuantity(trx, change, productId, delta);
    const stored: Omit<AdjustmentRow, 'id'> = {
      store_id: change.storeId,
      product_id: productId,
      delta,
      reason: request.reason,
      note: request.note ?? null,
      quantity_before: before,
      quantity_after: before + delta,
      created_at: change.now,
    };
    const id = await insertAdjustment(trx, stored);
    if (request.codes !== undefined) {
      await trx('digital_units').insert(request.codes.map((code) => ({ store_id: change.storeId, product_id: productId, code, adjustment_id: id, delivered_at: null, created_at: change.now })));
    }
    const adjustment: InventoryAdjustment = {
      id,
      product_id: productId,
      mode: modeOf(kind),
      delta,
      reason: stored.reason,
      note: stored.note,
      quantity_before: stored.quantity_before,
      quantity_after: stored.quantity_after,
      resource_version: row.resource_version,
      created_at: toIso(change.now),
    };
    await recordEvent(trx, { type: 'inventory.adjusted', storeId: change.storeId, installationId: change.installationId, occurredAt: change.now, data: { adjustment } });
    await recordProductUpdated(trx, row, change);
    return adjustment;
  });
}
