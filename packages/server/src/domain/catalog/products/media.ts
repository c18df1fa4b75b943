import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import { ApiError, type ErrorDetail } from '../../../core/errors';
import type { Db } from '../../../db/transactions';
import { type Actor, anyVersion } from '../../common/actor';
import { changeProduct } from './changes';
import { getProduct } from './queries';
import type { ProductRow } from './row';
import { frontFirst, storedImages } from './view';

export type ProductMedia = components['schemas']['ProductMedia'];
export type MediaImage = components['schemas']['MediaImage'];
export type MediaImageInput = components['schemas']['MediaImageInput'];

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
    throw invalid(
      'At most one image may set is_default.',
      defaults.slice(1).map((index) => ({ location: 'body', field: `/images/${index}/is_default`, message: 'another image is already the default' })),
    );
  }
  return frontFirst(input, defaults[0] ?? 0).map((image, sort) => ({ url: image.url, alt: image.alt ?? null, sort, is_default: sort === 0 }));
}

export function productMediaOf(row: ProductRow): ProductMedia {
  return { product_id: row.id, images: storedImages(row.images), resource_version: row.resource_version, updated_at: toIso(row.updated_at) };
}

/** `products.media.get`. */
export async function getProductMedia(db: Db, storeId: string, id: number): Promise<ProductMedia> {
  return productMediaOf(await getProduct(db, storeId, id));
}

/** `products.media.update`: replaces the images (the spec takes no If-Match: any version). */
export async function replaceProductMedia(db: Db, actor: Actor, id: number, input: readonly MediaImageInput[]): Promise<ProductMedia> {
  const images = arrangeImages(input);
  return productMediaOf(await changeProduct(db, actor, id, anyVersion, () => ({ images: JSON.stringify(images) })));
}
