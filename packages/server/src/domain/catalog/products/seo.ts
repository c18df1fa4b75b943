import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import type { Db } from '../../../db/transactions';
import { type Actor, anyVersion } from '../../common/actor';
import { sentColumns, type UpdateColumns } from '../../common/columns';
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

/** The columns of each field of `products.seo.update`; `keywords` replaces the stored list. */
const SEO_UPDATE_COLUMNS: UpdateColumns<ProductSeoUpdate, ProductColumns> = {
  slug: true,
  seo_title: true,
  seo_description: true,
  og_image: true,
  keywords: (keywords) => ({ keywords: JSON.stringify(keywords) }),
};

/**
 * `products.seo.update`: changes the given fields (a slug another product of the store has is
 * SLUG_TAKEN, also when a concurrent write took it first). The spec takes no If-Match: any version.
 */
export async function updateProductSeo(db: Db, actor: Actor, id: number, update: ProductSeoUpdate): Promise<ProductSeo> {
  const changed = await changeProduct(db, actor, id, anyVersion, async (current, trx) => {
    if (typeof update.slug === 'string') await requireFreeSlug(trx, 'products', 'product', actor.storeId, update.slug, current.id);
    return sentColumns(update, SEO_UPDATE_COLUMNS);
  });
  return productSeoOf(changed);
}
