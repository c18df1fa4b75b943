import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import type { Db } from '../../../db/transactions';
import { type Actor, anyVersion } from '../../common/actor';
import { requireFreeSlug } from '../../common/slugs';
import { changeProduct } from './changes';
import { getProduct } from './queries';
import type { ProductColumns, ProductRow } from './row';
import { keywordsOf } from './view';

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
export async function getProductSeo(db: Db, storeId: string, id: number): Promise<ProductSeo> {
  return productSeoOf(await getProduct(db, storeId, id));
}

/** The columns a ProductSeoUpdate changes: fields left out stay, null clears, `keywords` replaces the list. */
function columnsOf(update: ProductSeoUpdate): Partial<ProductColumns> {
  const columns: Partial<ProductColumns> = {};
  if (update.slug !== undefined) columns.slug = update.slug;
  if (update.seo_title !== undefined) columns.seo_title = update.seo_title;
  if (update.seo_description !== undefined) columns.seo_description = update.seo_description;
  if (update.og_image !== undefined) columns.og_image = update.og_image;
  if (update.keywords !== undefined) columns.keywords = JSON.stringify(update.keywords);
  return columns;
}

/**
 * `products.seo.update`: changes the given fields (a slug another product of the store has is
 * SLUG_TAKEN, also when a concurrent write took it first). The spec takes no If-Match: any version.
 */
export async function updateProductSeo(db: Db, actor: Actor, id: number, update: ProductSeoUpdate): Promise<ProductSeo> {
  const changed = await changeProduct(db, actor, id, anyVersion, async (current, trx) => {
    if (typeof update.slug === 'string') await requireFreeSlug(trx, 'products', 'product', actor.storeId, update.slug, current.id);
    return columnsOf(update);
  });
  return productSeoOf(changed);
}
