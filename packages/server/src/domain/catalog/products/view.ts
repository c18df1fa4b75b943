import type { components } from '@svc/contract';
import { toIso } from '../../../core/clock';
import { versionedTag } from '../../../core/etag';
import { fromHalalas } from '../../../core/money';
import { PRODUCT_ETAG_TYPE, type Product, type ProductRow, type ProductViewRow } from './row';

export type PriceRecord = components['schemas']['PriceRecord'];

/** One image as `products.images` stores it (JSON text). */
export interface StoredImage {
  url: string;
  alt: string | null;
  sort: number;
  is_default: boolean;
}

/** An image as a row may hold it (older rows: a bare URL, or no `sort`/`is_default`). */
interface StoredImageJson {
  url: string;
  alt?: string | null;
  sort?: number;
  is_default?: boolean;
}

function parseJson<T>(text: string | null, fallback: T): T {
  return text === null ? fallback : (JSON.parse(text) as T);
}

/** The items with the one at `index` moved to the front. */
export function frontFirst<T>(items: readonly T[], index: number): T[] {
  const chosen = items[index];
  return chosen === undefined ? [...items] : [chosen, ...items.filter((_, at) => at !== index)];
}

/** The stored images (`[{url, alt, sort, is_default}]`, a bare URL tolerated) in display order, the default first. */
export function storedImages(text: string): StoredImage[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error('Stored images are not a list');
  const images = parsed.map((item: unknown): StoredImageJson => (typeof item === 'string' ? { url: item } : (item as StoredImageJson)));
  const ordered = images.map((image, index) => ({ image, index })).sort((a, b) => (a.image.sort ?? a.index) - (b.image.sort ?? b.index));
  const defaultAt = Math.max(
    0,
    ordered.findIndex(({ image }) => image.is_default === true),
  );
  return frontFirst(
    ordered.map(({ image }) => image),
    defaultAt,
  ).map((image, sort) => ({ url: image.url, alt: image.alt ?? null, sort, is_default: sort === 0 }));
}

/** The stored keywords (a JSON list of strings). */
export function keywordsOf(row: Pick<ProductRow, 'keywords'>): string[] {
  const value: unknown = JSON.parse(row.keywords);
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/** The spec's Product for a row read with its category's name. */
export function productView(row: ProductViewRow): Product {
  const images = storedImages(row.images);
  const [first] = images;
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    short_desc: row.short_desc,
    image: first?.url ?? null,
    images: images.map((image) => image.url),
    image_alt: first?.alt ?? null,
    category: row.category_name,
    slug: row.slug,
    keywords: parseJson<string[]>(row.keywords, []),
    supported_devices: parseJson<Product['supported_devices']>(row.supported_devices, null),
    seo_title: row.seo_title,
    seo_description: row.seo_description,
    og_image: row.og_image,
    product_kind: row.product_kind,
    status: row.status,
    price: fromHalalas(Number(row.price_halalas)),
    old_price: row.old_price_halalas === null ? null : fromHalalas(Number(row.old_price_halalas)),
    price_state: row.price_state,
    resource_version: row.resource_version,
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}

/**
 * Views already built for row objects: the SQLite reader hands out the same row objects until
 * something is committed, so a product read again is not rendered again. Views are shared: read-only.
 */
const viewsOfRows = new WeakMap<object, Product>();

/** The view of a row read with its category's name, built once per row object. */
export function viewOfRow(row: Readonly<ProductViewRow>): Product {
  let view = viewsOfRows.get(row);
  if (view === undefined) {
    view = productView(row);
    viewsOfRows.set(row, view);
  }
  return view;
}

/** The price record: the product's price, previous price and pricing state, with its version. */
export function priceRecordView(row: ProductRow): PriceRecord {
  return {
    price: fromHalalas(Number(row.price_halalas)),
    old_price: row.old_price_halalas === null ? null : fromHalalas(Number(row.old_price_halalas)),
    price_state: row.price_state,
    resource_version: row.resource_version,
    updated_at: toIso(Number(row.updated_at)),
  };
}

/** What the product's ETag names (`etagOf(key, productTag(row))`); prices and stock share it. */
export const productTag = versionedTag(PRODUCT_ETAG_TYPE);
