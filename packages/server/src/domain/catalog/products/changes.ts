import type { components } from '@svc/contract';
import type { Knex } from 'knex';
import { ApiError, invalidBodyField } from '../../../core/errors';
import { toHalalas } from '../../../core/money';
import { type Db, inTransaction } from '../../../db/transactions';
import type { DomainEvent } from '../../../services/outbox';
import { type Actor, eventBy, type Precondition } from '../../common/actor';
import { sentColumns } from '../../common/columns';
import { requireFreeSlug } from '../../common/slugs';
import { type ColumnsAndResult, changeVersioned, changeVersionedWithResult, createVersioned } from '../../common/versioned';
import { productsCountChanged } from '../categories/changes';
import { findCategoryByName } from '../categories/queries';
import { categoryIdByName, findProduct, productResource } from './queries';
import type { ProductColumns, ProductRecord } from './row';
import { productView, type StoredImage } from './view';

export type ProductCreate = components['schemas']['ProductCreate'];
export type ProductContentUpdate = components['schemas']['ProductContentUpdate'];
export type PriceUpdate = components['schemas']['PriceUpdate'];

/** The most images a product holds, `image` included. */
export const MAX_IMAGES = 20;

/** `old_price`, when set, is the price before discount: above `price` (docs/decisions/0013-products-prices-categories-inventory.md). */
function requireOldPriceAbove(price: number, oldPrice: number | null, message = 'must be above price'): void {
  if (oldPrice !== null && oldPrice <= price) throw invalidBodyField('/old_price', message);
}

/** The create body's images as stored: `image` (else the first of `images`) is the default, first. */
function imagesOfCreate(body: ProductCreate): StoredImage[] {
  const listed = body.images ?? [];
  const defaultUrl = body.image ?? listed[0];
  if (defaultUrl === undefined) {
    if (body.image_alt !== undefined) throw invalidBodyField('/image_alt', 'needs an image to describe');
    return [];
  }
  const urls = [defaultUrl, ...listed.filter((url) => url !== defaultUrl)];
  if (urls.length > MAX_IMAGES) throw invalidBodyField('/images', `must NOT have more than ${MAX_IMAGES} images, image included`);
  return urls.map((url, sort) => ({ url, alt: sort === 0 ? (body.image_alt ?? null) : null, sort, is_default: sort === 0 }));
}

/** The create body's device list as the stored set (`{"ios": true}`). */
const deviceSet = (devices: readonly string[]) => JSON.stringify(Object.fromEntries(devices.map((device) => [device, true])));

/** `product.updated` (or `product.created`) with the product as it now is. */
export const productEvent = (actor: Actor, type: 'product.created' | 'product.updated', product: ProductRecord): DomainEvent =>
  eventBy(actor, type, { product: productView(product) });

/**
 * `products.create`: `inactive`; without `price` it is `0.00` with `price_state` `required`, with a
 * price `ready`. The category must exist (422), the slug be free in the store (409); its
 * `products_count` grows, so its `updated_at` moves. Writes `product.created` in the same
 * transaction.
 */
export function createProduct(db: Db, actor: Actor, body: ProductCreate): Promise<ProductRecord> {
  return createVersioned(db, actor, productResource, {
    columns: async (trx): Promise<ProductColumns> => {
      const price = body.price === undefined ? 0 : toHalalas(body.price);
      const oldPrice = body.old_price === undefined || body.old_price === null ? null : toHalalas(body.old_price);
      requireOldPriceAbove(price, oldPrice);
      const images = imagesOfCreate(body);
      const categoryId = body.category === undefined || body.category === null ? null : await categoryIdByName(trx, actor.storeId, body.category);
      if (body.slug !== undefined) await requireFreeSlug(trx, 'products', 'product', actor.storeId, body.slug);
      await productsCountChanged(trx, actor.storeId, [categoryId], actor.now);
      return {
        name: body.name,
        description: body.description ?? '',
        short_desc: body.short_desc ?? null,
        category_id: categoryId,
        slug: body.slug ?? null,
        keywords: JSON.stringify(body.keywords ?? []),
        supported_devices: body.supported_devices === undefined ? null : deviceSet(body.supported_devices),
        seo_title: body.seo_title ?? null,
        seo_description: body.seo_description ?? null,
        og_image: body.og_image ?? null,
        images: JSON.stringify(images),
        product_kind: body.product_kind,
        status: 'inactive',
        price_halalas: price,
        old_price_halalas: oldPrice,
        price_state: body.price === undefined ? 'required' : 'ready',
        quantity: 0,
      };
    },
    events: (created) => [productEvent(actor, 'product.created', created)],
  });
}

/**
 * A change of the product's own columns: the precondition (If-Match, or any version), the change's
 * rules, `resource_version + 1`, and `product.updated` in the same transaction.
 */
export function changeProduct(
  db: Db,
  actor: Actor,
  id: number,
  precondition: Precondition<ProductRecord>,
  columns: (current: ProductRecord, trx: Knex.Transaction) => Promise<Partial<ProductColumns>> | Partial<ProductColumns>,
  moreEvents: (changed: ProductRecord) => DomainEvent[] = () => [],
): Promise<ProductRecord> {
  return changeVersioned(db, actor, productResource, id, {
    precondition,
    columns,
    events: (changed) => [...moreEvents(changed), productEvent(actor, 'product.updated', changed)],
  });
}

/**
 * `changeProduct` for a change whose rules also make something beside the columns (an inventory
 * adjustment): its `columns` returns both, `moreEvents` sees the result, and it comes back beside
 * the changed product (`changeVersionedWithResult`).
 */
export function changeProductWithResult<Result>(
  db: Db,
  actor: Actor,
  id: number,
  precondition: Precondition<ProductRecord>,
  columns: (current: ProductRecord, trx: Knex.Transaction) => Promise<ColumnsAndResult<Partial<ProductColumns>, Result>>,
  moreEvents: (changed: ProductRecord, result: Result) => DomainEvent[],
): Promise<{ changed: ProductRecord; result: Result }> {
  return changeVersionedWithResult(db, actor, productResource, id, {
    precondition,
    columns,
    events: (changed, _trx, result) => [...moreEvents(changed, result), productEvent(actor, 'product.updated', changed)],
  });
}

/**
 * `products.content`: name, descriptions, category (by name, or null), supported devices (null
 * clears) and `status`. Making the product `active` while `price_state` is `required` is 409
 * PRICE_REQUIRED (docs/decisions/0013-products-prices-categories-inventory.md). A product moved to another category changes the
 * `products_count` of both: their `updated_at` moves, before the product's row is locked (the lock
 * order of categories/changes); a move that came in between is caught up after it.
 */
export function updateProductContent(
  db: Db,
  actor: Actor,
  id: number,
  precondition: Precondition<ProductRecord>,
  body: ProductContentUpdate,
): Promise<ProductRecord> {
  return inTransaction(db, async (trx) => {
    const touched = body.category === undefined ? [] : await categoriesOfMove(trx, actor.storeId, id, body.category);
    await productsCountChanged(trx, actor.storeId, touched, actor.now);
    return changeProduct(trx, actor, id, precondition, async (current) => {
      if (body.status === 'active' && current.price_state === 'required') {
        throw new ApiError('PRICE_REQUIRED', 'Set a price before activating the product.');
      }
      const columns = await sentColumns<ProductContentUpdate, ProductColumns>(body, {
        name: true,
        description: true,
        short_desc: true,
        category: async (category) => ({ category_id: category === null ? null : await categoryIdByName(trx, actor.storeId, category) }),
        supported_devices: (devices) => ({ supported_devices: devices === null ? null : deviceSet(devices) }),
        status: true,
      });
      const [from, to] = [categoryIdOf(current.category_id), columns.category_id];
      if (to !== undefined && from !== to) {
        await productsCountChanged(
          trx,
          actor.storeId,
          [from, to].filter((category) => !touched.includes(category)),
          actor.now,
        );
      }
      return columns;
    });
  });
}

const categoryIdOf = (id: number | string | null): number | null => (id === null ? null : Number(id));

/**
 * The categories a move of the product to `category` (a name, or null) changes, read before its
 * row is locked: where it is and where it goes, when they differ. An unknown product or category
 * touches none (the change answers 404 or 422 as before).
 */
async function categoriesOfMove(trx: Knex.Transaction, storeId: string, id: number, category: string | null): Promise<Array<number | null>> {
  const product = await findProduct(trx, storeId, id);
  if (!product) return [];
  const to = category === null ? null : (await findCategoryByName(trx, storeId, category))?.id;
  const from = categoryIdOf(product.category_id);
  return to === undefined || categoryIdOf(to) === from ? [] : [from, categoryIdOf(to)];
}

/**
 * `products.prices`: sets the price and, when given, the previous price (null clears it; left out
 * it stays, and must still be above the new price). The price is set, so `price_state` is `ready`.
 */
export function updateProductPrices(db: Db, actor: Actor, id: number, precondition: Precondition<ProductRecord>, body: PriceUpdate): Promise<ProductRecord> {
  return changeProduct(db, actor, id, precondition, (current) => {
    const price = toHalalas(body.price);
    if (body.old_price !== undefined) {
      const oldPrice = body.old_price === null ? null : toHalalas(body.old_price);
      requireOldPriceAbove(price, oldPrice);
      return { price_halalas: price, old_price_halalas: oldPrice, price_state: 'ready' };
    }
    const kept = current.old_price_halalas === null ? null : Number(current.old_price_halalas);
    requireOldPriceAbove(price, kept, 'the old_price kept must be above the new price: send old_price (null clears it)');
    return { price_halalas: price, old_price_halalas: kept, price_state: 'ready' };
  });
}
