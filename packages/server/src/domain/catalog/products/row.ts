import type { components } from '@svc/contract';
import { ApiError } from '../../../core/errors';

/*
 * Products: a new product is `inactive`, `0.00`, `price_state` `required`; a price set makes it
 * `ready`; activation needs a price (docs/decisions/0007-resources-the-interface-does-not-detail.md). Prices, media, SEO and stock are
 * columns of the product row and share its `resource_version` and ETag.
 */

export type Product = components['schemas']['Product'];
export type ProductStatus = components['schemas']['ProductStatus'];

/** A `products` row as both databases return it. */
export interface ProductRow {
  id: number;
  store_id: string;
  name: string;
  description: string;
  short_desc: string | null;
  category_id: number | null;
  slug: string | null;
  keywords: string;
  supported_devices: string | null;
  seo_title: string | null;
  seo_description: string | null;
  og_image: string | null;
  images: string;
  product_kind: Product['product_kind'];
  status: ProductStatus;
  price_halalas: number;
  old_price_halalas: number | null;
  price_state: Product['price_state'];
  quantity: number;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

/** The columns of a product row a client may change (id, store, version and times are the write path's). */
export type ProductColumns = Omit<ProductRow, 'id' | 'store_id' | 'resource_version' | 'created_at' | 'updated_at'>;

/** A product row read with its category's name, as every product read is. */
export type ProductRecord = ProductRow & { category_name: string | null };

/** The columns a product's view is made of: all but the store, the category's id and the stock. */
export const VIEW_COLUMNS = [
  'id',
  'name',
  'description',
  'short_desc',
  'slug',
  'keywords',
  'supported_devices',
  'seo_title',
  'seo_description',
  'og_image',
  'images',
  'product_kind',
  'status',
  'price_halalas',
  'old_price_halalas',
  'price_state',
  'resource_version',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof ProductRow)[];

export type ProductViewRow = Pick<ProductRow, (typeof VIEW_COLUMNS)[number]> & { category_name: string | null };

/** The resource type inside a product's ETag; prices share it (they are a view of the product). */
export const PRODUCT_ETAG_TYPE = 'product';

export const productNotFound = () => new ApiError('NOT_FOUND', 'No product with that id in this store.');
