import type { Knex } from 'knex';
import { ApiError } from '../../../core/errors';
import { rowIdOf } from '../../../core/ids';
import { lockForTransaction } from '../../../db/locks';
import type { Db } from '../../../db/transactions';
import type { Actor, Precondition } from '../../common/actor';
import { sentColumns, type UpdateColumns } from '../../common/columns';
import { requireFreeSlug } from '../../common/slugs';
import { nameKeyOf } from '../../common/text';
import { changeVersioned, createVersioned } from '../../common/versioned';
import { categoryResource, findCategory, findCategoryByName } from './queries';
import { type CategoryColumns, type CategoryCreateInput, type CategoryRecord, type CategoryUpdate, categoryNameTaken } from './row';

/** A parent chain longer than this is treated as broken (it cannot happen through the API). */
const MAX_DEPTH = 10_000;

const detail = (field: string, message: string) => ({ location: 'body' as const, field, message });

const parentInvalid = (message: string, reason: string) => new ApiError('CATEGORY_PARENT_INVALID', message, { details: [detail('/parent_id', reason)] });

async function requireNameFree(db: Db, storeId: string, name: string, self?: number): Promise<void> {
  const holder = await findCategoryByName(db, storeId, name);
  if (holder && holder.id !== self) throw categoryNameTaken({ name, id: holder.id });
}

/** The parent exists in the store and, for an existing category, is neither itself nor one of its descendants. */
async function requireValidParent(db: Db, storeId: string, parentId: number, self?: number): Promise<void> {
  if (parentId === self) throw parentInvalid(`Category ${parentId} cannot be its own parent.`, 'is the category itself');
  // A body id beyond the id range names no category (and PostgreSQL refuses to compare with it).
  let current = rowIdOf(parentId) === undefined ? undefined : await findCategory(db, storeId, parentId);
  if (!current) throw parentInvalid(`There is no category ${parentId} in this store.`, 'is not a category of this store');
  if (self === undefined) return;
  for (let depth = 0; current && depth < MAX_DEPTH; depth += 1) {
    if (current.parent_id === self) {
      throw parentInvalid(`Category ${parentId} cannot be the parent: it is a descendant of this category.`, 'would make a cycle');
    }
    current = current.parent_id === null ? undefined : await findCategory(db, storeId, current.parent_id);
  }
  if (current) throw parentInvalid(`Category ${parentId} has too deep a chain of parents.`, 'would make too deep a tree');
}

/**
 * On PostgreSQL, serialises the parent changes of one store for the rest of the transaction, so two
 * concurrent moves cannot make a cycle together (SQLite runs one transaction at a time anyway).
 */
async function lockStoreTree(trx: Knex.Transaction, storeId: string): Promise<void> {
  await lockForTransaction(trx, `categories-tree:${storeId}`);
}

/*
 * `updated_at` and what the answers show beyond a row's own columns (docs/decisions/0069-incremental-lists.md).
 * A category shows `products_count`, and a product the name of its category: when either
 * changes, the other's `updated_at` moves, so a sync by `updated_since` brings it again. Its
 * `resource_version` stays: neither is a field its writer sets, and an `If-Match` read before still
 * names what that writer last wrote. Locks are taken categories first, then products (a category's
 * rename, a product joining or leaving categories), each kind in ascending id order, so that two
 * such writes on PostgreSQL wait for each other instead of deadlocking.
 */

/**
 * Products joined or left these categories: their `products_count` changed, and so does their
 * `updated_at` (null and repeated ids are left out). Run before the product's row is locked.
 */
export async function productsCountChanged(trx: Knex.Transaction, storeId: string, categoryIds: ReadonlyArray<number | null>, now: number): Promise<void> {
  const ids = [...new Set(categoryIds.filter((id): id is number => id !== null))].sort((a, b) => a - b);
  for (const id of ids) await trx('categories').where({ store_id: storeId, id }).update({ updated_at: now });
}

/** The category's name changed: every product in it shows the new name, so their `updated_at` moves, after the category's row is locked. */
async function categoryRenamed(trx: Knex.Transaction, storeId: string, categoryId: number, now: number): Promise<void> {
  await trx('products').where({ store_id: storeId, category_id: categoryId }).update({ updated_at: now });
}

/** `categories.create`: `active`, position 0 and top-level unless the body says otherwise. */
export function createCategory(db: Db, actor: Actor, body: CategoryCreateInput): Promise<CategoryRecord> {
  return createVersioned(db, actor, categoryResource, {
    columns: async (trx): Promise<CategoryColumns> => {
      const parentId = body.parent_id ?? null;
      if (parentId !== null) await requireValidParent(trx, actor.storeId, parentId);
      await requireNameFree(trx, actor.storeId, body.name);
      if (body.slug !== undefined) await requireFreeSlug(trx, 'categories', 'category', actor.storeId, body.slug);
      return {
        name: body.name,
        name_key: nameKeyOf(body.name),
        slug: body.slug ?? null,
        description: body.description ?? null,
        parent_id: parentId,
        sort_order: body.sort_order ?? 0,
        status: body.status ?? 'active',
        image: body.image ?? null,
        seo_title: body.seo_title ?? null,
        seo_description: body.seo_description ?? null,
      };
    },
  });
}

/** The columns of each field of `categories.update`; the name keeps its case-insensitive key beside it. */
const CATEGORY_UPDATE_COLUMNS: UpdateColumns<CategoryUpdate, CategoryColumns> = {
  name: (name) => ({ name, name_key: nameKeyOf(name) }),
  slug: true,
  description: true,
  parent_id: true,
  sort_order: true,
  status: true,
  image: true,
  seo_title: true,
  seo_description: true,
};

/** `categories.update`: the body's changes, when the precondition (If-Match) accepts the current version. */
export function updateCategory(db: Db, actor: Actor, id: number, precondition: Precondition<CategoryRecord>, body: CategoryUpdate): Promise<CategoryRecord> {
  return changeVersioned(db, actor, categoryResource, id, {
    precondition,
    columns: async (current, trx) => {
      if (body.name !== undefined) await requireNameFree(trx, actor.storeId, body.name, current.id);
      if (body.slug !== undefined && body.slug !== null) await requireFreeSlug(trx, 'categories', 'category', actor.storeId, body.slug, current.id);
      if (body.parent_id !== undefined && body.parent_id !== null && body.parent_id !== current.parent_id) {
        await lockStoreTree(trx, actor.storeId);
        await requireValidParent(trx, actor.storeId, body.parent_id, current.id);
      }
      if (body.name !== undefined && body.name !== current.name) await categoryRenamed(trx, actor.storeId, current.id, actor.now);
      return sentColumns(body, CATEGORY_UPDATE_COLUMNS);
    },
  });
}
