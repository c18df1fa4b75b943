import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { toIso } from '../../core/clock';
import { ApiError, type ErrorDetail } from '../../core/errors';
import { type Db, inTransaction } from '../../db/transactions';
import { recordEvent } from '../../platform/outbox';
import { type ProductRow, categoryNameOf, findProductRow, frontFirst, notFound, productView, rowIdOf, storedImages } from './products';

export type ProductMedia = components['schemas']['ProductMedia'];
export type MediaImage = components['schemas']['MediaImage'];
export type MediaImageInput = components['schemas']['MediaImageInput'];

/*
 * Media and SEO are columns of `products`; every change raises `resource_version`, moves
 * `updated_at` and writes `product.updated` in the same transaction.
 */

/** The product id a path names (`^[1-9][0-9]*$`, checked by the validator); NOT_FOUND when no row can have it. */
export function productIdOf(pathId: string): number {
  const id = rowIdOf(pathId);
  if (id === undefined) throw notFound();
  return id;
}

/** The store's product, or 404 NOT_FOUND (also for another store's product: no existence oracle). */
export async function requireProductRow(db: Db, storeId: string, productId: number): Promise<ProductRow> {
  const row = await findProductRow(db, storeId, productId);
  if (!row) throw notFound();
  return row;
}


export type ProductColumns = Partial<Pick<ProductRow, 'slug' | 'keywords' | 'seo_title' | 'seo_description' | 'og_image' | 'images'>>;

/**
 * Changes the product (scoped by store), raising `resource_version` by one and setting `updated_at`;
 * inside a transaction the update also locks the row until commit. Returns the changed row.
 */
export async function touchProduct(trx: Knex.Transaction, storeId: string, productId: number, now: number, columns: ProductColumns = {}): Promise<ProductRow> {
  const updated = await trx('products')
    .where({ id: productId, store_id: storeId })
    .update({ ...columns, resource_version: trx.raw('resource_version + 1'), updated_at: now });
  if (updated === 0) throw notFound();
  return requireProductRow(trx, storeId, productId);
}


const invalid = (message: string, details: ErrorDetail[]) => new ApiError('VALIDATION_FAILED', message, { details });

/**
 * The new image list (ProductMediaUpdate): each URL once and at most one default, else
 * VALIDATION_FAILED; the default (or the first image) moves to the front, `sort` follows the order.
 */
export function arrangeImages(input: readonly MediaImageInput[]): MediaImage[] {
  const seen = new Set<string>();
  const repeated: ErrorDetail[] = [];
  input.forEach(({ url }, index) => {
    if (seen.has(url)) repeated.push({ location: 'body', field: `/images/${index}/url`, message: 'appears more than once; each URL may appear once' });
    seen.add(url);
  });
  if (repeated.length > 0) throw invalid('Each image URL may appear once.', repeated);
  const defaults = input.flatMap((image, index) => (image.is_default === true ? [index] : []));
  if (defaults.length > 1) {
    throw invalid('At most one image may set is_default.', defaults.slice(1).map((index) => ({ location: 'body', field: `/images/${index}/is_default`, message: 'another image is already the default' })));
  }
  return frontFirst([...input], defaults[0] ?? 0).map((image, sort) => ({ url: image.url, alt: image.alt ?? null, sort, is_default: sort === 0 }));
}

export function productMediaOf(row: ProductRow): ProductMedia {
  return { product_id: row.id, images: storedImages(row.images), resource_version: row.resource_version, updated_at: toIso(row.updated_at) };
}

/** `products.media.get`. */
export async function getProductMedia(db: Db, storeId: string, pathId: string): Promise<ProductMedia> {
  return productMediaOf(await requireProductRow(db, storeId, productIdOf(pathId)));
}

export interface ProductChange {
  storeId: string;
  installationId: string;
  pathId: string;
  now: number;
}

/** `products.media.update`: replaces the images, raises the version and writes `product.updated`, in one transaction. */
export async function replaceProductMedia(db: Db, change: ProductChange, input: readonly MediaImageInput[]): Promise<ProductMedia> {
  const productId = productIdOf(change.pathId);
  const images = arrangeImages(input);
  return inTransaction(db, async (trx) => {
    const row = await touchProduct(trx, change.storeId, productId, change.now, { images: JSON.stringify(images) });
    await recordProductUpdated(trx, row, change);
    return productMediaOf(row);
  });
}

function jsonList(text: string): string[] {
  const value: unknown = JSON.parse(text);
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

export const keywordsOf = (row: Pick<ProductRow, 'keywords'>): string[] => jsonList(row.keywords);

/** Writes `product.updated` with the product as it now is, in the caller's transaction. */
export async function recordProductUpdated(trx: Knex.Transaction, row: ProductRow, change: Pick<ProductChange, 'storeId' | 'installationId' | 'now'>): Promise<void> {
  const product = productView(row, await categoryNameOf(trx, row));
  await recordEvent(trx, { type: 'product.updated', storeId: change.storeId, installationId: change.installationId, occurredAt: change.now, data: { product } });
}
