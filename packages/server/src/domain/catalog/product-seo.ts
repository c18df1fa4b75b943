import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { toIso } from '../../core/clock';
import { ApiError } from '../../core/errors';
import { type Db, brokenUniqueIndex, inTransaction } from '../../db/transactions';
import {
  type ProductChange,
  type ProductColumns,
  requireProductRow,
  keywordsOf,
  productIdOf,
  recordProductUpdated,
  touchProduct,
} from './product-media';
import type { ProductRow } from './products';

export type ProductSeo = components['schemas']['ProductSeo'];
export type ProductSeoUpdate = components['schemas']['ProductSeoUpdate'];

export function productSeoOf(row: ProductRow): ProductSeo {
  return {
    product_id: row.id,
    slug: row.slug,
    seo_title: row.seo_title,
    seo_description: row.seo_description,
    keywords: keywordsOf(row),
    og_image: row.og_image,
    resource_version: row.resource_version,
    updated_at: toIso(row.updated_at),
  };
}

/** `products.seo.get`. */
export async function getProductSeo(db: Db, storeId: string, pathId: string): Promise<ProductSeo> {
  return productSeoOf(await requireProductRow(db, storeId, productIdOf(pathId)));
}

/** The columns a ProductSeoUpdate changes: fields left out stay, null clears, `keywords` replaces the list. */
function columnsOf(update: ProductSeoUpdate): ProductColumns {
  const columns: ProductColumns = {};
  if (update.slug !== undefined) columns.slug = update.slug;
  if (update.seo_title !== undefined) columns.seo_title = update.seo_title;
  if (update.seo_description !== undefined) columns.seo_description = update.seo_description;
  if (update.og_image !== undefined) columns.og_image = update.og_image;
  if (update.keywords !== undefined) columns.keywords = JSON.stringify(update.keywords);
  return columns;
}

const slugTaken = () =>
  new ApiError('SLUG_TAKEN', 'Another product of this store already uses this slug.', {
    details: [{ location: 'body', field: '/slug', message: 'is already used by another product of this store' }],
  });

async function assertSlugFree(trx: Knex.Transaction, storeId: string, productId: number, slug: string): Promise<void> {
  const other = await trx('products').where({ store_id: storeId, slug }).whereNot({ id: productId }).first('id');
  if (other) throw slugTaken();
}

/**
 * `products.seo.update`: changes the given fields (a slug taken by another product of the store is
 * SLUG_TAKEN, also when a concurrent write took it first), raises the version and writes
 * `product.updated`, in one transaction.
 */
export async function updateProductSeo(db: Db, change: ProductChange, update: ProductSeoUpdate): Promise<ProductSeo> {
  const productId = productIdOf(change.pathId);
  const columns = columnsOf(update);
  return inTransaction(db, async (trx) => {
    await requireProductRow(trx, change.storeId, productId);
    if (typeof columns.slug === 'string') await assertSlugFree(trx, change.storeId, productId, columns.slug);
    let row: ProductRow;
    try {
      row = await touchProduct(trx, change.storeId, productId, change.now, columns);
    } catch (error) {
      throw brokenUniqueIndex(error)?.includes('slug') ? slugTaken() : error;
    }
    await recordProductUpdated(trx, row, change);
    return productSeoOf(row);
  });
}
