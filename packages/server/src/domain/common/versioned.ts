import type { Knex } from 'knex';
import type { ApiError } from '../../core/errors';
import { lockRows } from '../../db/locks';
import { brokenUniqueIndex, type Db, insertedId, inTransaction } from '../../db/transactions';
import { type DomainEvent, recordEvent } from '../../services/outbox';
import type { Actor, Precondition } from './actor';

/** A row that carries a concurrency version: `resource_version` rises by one on every change. */
export interface VersionedRow {
  id: number;
  resource_version: number;
}

/** How the write path reads and refuses one kind of versioned resource (products, categories, …). */
export interface VersionedResource<Row extends VersionedRow> {
  /** The table; every row has `store_id`, `resource_version` and `updated_at`. */
  readonly table: string;
  /** The store's row with this id, as the change and its events need it; undefined when absent or another store's. */
  find(db: Db, storeId: string, id: number): Promise<Row | undefined>;
  /** 404 for an id the store does not have (also another store's: no existence oracle). */
  notFound(): ApiError;
  /** The interface's error for a unique index the write broke (a concurrent writer won), if it has one. */
  uniqueConflict?(index: string): ApiError | undefined;
}

export interface VersionedChange<Row extends VersionedRow, Columns> {
  /** Refuses the change for the current row (If-Match), or `anyVersion`. */
  readonly precondition: Precondition<Row>;
  /**
   * Whether the change would leave the current row as it is, where the operation says asking for
   * what the row already is changes nothing (a page or coupon set to the status it has): then, once
   * the precondition passed, nothing is written: no new version, no `updated_at`, no events, and the
   * current row is the answer.
   */
  readonly unchanged?: (current: Row) => boolean;
  /** The rules of the change: throws to refuse, returns the columns to write. */
  readonly columns: (current: Row, trx: Knex.Transaction) => Promise<Columns> | Columns;
  /** The outbox events of the change, from the changed row, written in the same transaction. */
  readonly events?: (changed: Row, trx: Knex.Transaction) => Promise<DomainEvent[]> | DomainEvent[];
}

/**
 * The one way a resource is changed: in one transaction (the request's Idempotency-Key transaction
 * when there is one), the row is locked (PostgreSQL `FOR UPDATE`; SQLite runs one writer at a time),
 * the precondition is asked, the change's rules give the columns, the row is written with
 * `resource_version + 1` and the actor's `updated_at`, and the change's events go to the outbox.
 * Holding the lock, two changes of one row run one after the other: of two sent with one If-Match,
 * the second sees the first's version and is refused.
 */
export function changeVersioned<Row extends VersionedRow, Columns extends object>(
  db: Db,
  actor: Actor,
  resource: VersionedResource<Row>,
  id: number,
  change: VersionedChange<Row, Columns>,
): Promise<Row> {
  return inTransaction(db, async (trx) => {
    const current = await lockRow(trx, resource, actor.storeId, id);
    change.precondition(current);
    if (change.unchanged?.(current)) return current;
    return writeChange(trx, actor, resource, current, await change.columns(current, trx), change.events);
  });
}

/**
 * A change whose rules also answer something beside the columns (the order a recovered cart
 * placed, what a coupon's use takes off): its `columns` returns both, and the result comes back
 * beside the changed row instead of through a variable the rules set.
 */
export interface VersionedChangeWithResult<Row extends VersionedRow, Columns, Result>
  extends Omit<VersionedChange<Row, Columns>, 'columns' | 'unchanged' | 'events'> {
  readonly columns: (current: Row, trx: Knex.Transaction) => Promise<ColumnsAndResult<Columns, Result>> | ColumnsAndResult<Columns, Result>;
  /** The outbox events of the change, from the changed row and the result (an adjustment's own event). */
  readonly events?: (changed: Row, trx: Knex.Transaction, result: Result) => Promise<DomainEvent[]> | DomainEvent[];
}

export interface ColumnsAndResult<Columns, Result> {
  readonly columns: Columns;
  readonly result: Result;
}

/** `changeVersioned` for a change with a result (see `VersionedChangeWithResult`): the same steps, in the same transaction. */
export function changeVersionedWithResult<Row extends VersionedRow, Columns extends object, Result>(
  db: Db,
  actor: Actor,
  resource: VersionedResource<Row>,
  id: number,
  change: VersionedChangeWithResult<Row, Columns, Result>,
): Promise<{ changed: Row; result: Result }> {
  return inTransaction(db, async (trx) => {
    const current = await lockRow(trx, resource, actor.storeId, id);
    change.precondition(current);
    const { columns, result } = await change.columns(current, trx);
    const events = change.events;
    return { changed: await writeChange(trx, actor, resource, current, columns, events && ((changed, inner) => events(changed, inner, result))), result };
  });
}

/** Writes a change's columns at the next version and the actor's time, reads the row back, and records its events. */
async function writeChange<Row extends VersionedRow, Columns extends object>(
  trx: Knex.Transaction,
  actor: Actor,
  resource: VersionedResource<Row>,
  current: Row,
  columns: Columns,
  events: VersionedChange<Row, Columns>['events'],
): Promise<Row> {
  await writeOrConflict(resource, () =>
    trx(resource.table)
      .where({ id: current.id, store_id: actor.storeId })
      .update({ ...columns, resource_version: current.resource_version + 1, updated_at: actor.now }),
  );
  const changed = await resource.find(trx, actor.storeId, current.id);
  if (!changed) throw new Error(`${resource.table} ${current.id} vanished during its own change`);
  for (const event of (await events?.(changed, trx)) ?? []) await recordEvent(trx, event);
  return changed;
}

/**
 * The one way a resource is created: the row is inserted at `resource_version` 1, stamped with the
 * actor's time, a unique index it breaks answers the resource's conflict, and the creation's events
 * go to the outbox in the same transaction. Rows that belong to it (`parts`) are written before it is
 * read back, so its events see them. Rules (uniqueness checks with friendly errors, references)
 * run before, inside the same transaction: pass `prepare`.
 */
export function createVersioned<Row extends VersionedRow, Columns extends object>(
  db: Db,
  actor: Actor,
  resource: VersionedResource<Row>,
  creation: {
    readonly columns: (trx: Knex.Transaction) => Promise<Columns> | Columns;
    /** The rows that belong to the new one and are created with it, before it is read back. */
    readonly parts?: (id: number, trx: Knex.Transaction) => Promise<void>;
    readonly events?: (created: Row, trx: Knex.Transaction) => Promise<DomainEvent[]> | DomainEvent[];
  },
): Promise<Row> {
  const { parts, events } = creation;
  return createVersionedWithResult(db, actor, resource, {
    columns: async (trx) => ({ columns: await creation.columns(trx), result: undefined }),
    ...(parts ? { parts } : {}),
    ...(events ? { events } : {}),
  }).then(({ created }) => created);
}

/**
 * `createVersioned` for a creation whose rules also make something beside the columns (an order's
 * priced lines): its `columns` returns both, and the result goes to `parts` and `events` and comes
 * back beside the new row, never through a variable the rules set.
 */
export function createVersionedWithResult<Row extends VersionedRow, Columns extends object, Result>(
  db: Db,
  actor: Actor,
  resource: VersionedResource<Row>,
  creation: {
    readonly columns: (trx: Knex.Transaction) => Promise<ColumnsAndResult<Columns, Result>> | ColumnsAndResult<Columns, Result>;
    /** The rows that belong to the new one and are created with it (an order's lines), before it is read back. */
    readonly parts?: (id: number, trx: Knex.Transaction, result: Result) => Promise<void>;
    readonly events?: (created: Row, trx: Knex.Transaction, result: Result) => Promise<DomainEvent[]> | DomainEvent[];
  },
): Promise<{ created: Row; result: Result }> {
  return inTransaction(db, async (trx) => {
    const { columns, result } = await creation.columns(trx);
    const row = { ...columns, store_id: actor.storeId, resource_version: 1, created_at: actor.now, updated_at: actor.now };
    const id = insertedId(await writeOrConflict(resource, () => trx(resource.table).insert(row).returning('id')));
    await creation.parts?.(id, trx, result);
    const created = await resource.find(trx, actor.storeId, id);
    if (!created) throw new Error(`${resource.table} ${id} is missing right after its insert`);
    for (const event of (await creation.events?.(created, trx, result)) ?? []) await recordEvent(trx, event);
    return { created, result };
  });
}

/**
 * The one way a resource is deleted for good: in one transaction the row is locked and read as for
 * a change (404 when the store has none), the precondition is asked, and the row is deleted.
 * Answers the row as it was.
 */
export function deleteVersioned<Row extends VersionedRow>(
  db: Db,
  actor: Actor,
  resource: VersionedResource<Row>,
  id: number,
  precondition: Precondition<Row>,
): Promise<Row> {
  return inTransaction(db, async (trx) => {
    const current = await lockRow(trx, resource, actor.storeId, id);
    precondition(current);
    await trx(resource.table).where({ id, store_id: actor.storeId }).delete();
    return current;
  });
}

/** The current row, locked until the transaction ends; 404 when the store has no such row. */
async function lockRow<Row extends VersionedRow>(trx: Knex.Transaction, resource: VersionedResource<Row>, storeId: string, id: number): Promise<Row> {
  await lockRows(trx, trx(resource.table).where({ id, store_id: storeId }));
  const current = await resource.find(trx, storeId, id);
  if (!current) throw resource.notFound();
  return current;
}

/** Runs a write; a unique index it breaks becomes the resource's own error where it names one. */
export async function writeOrConflict<Row extends VersionedRow, T>(
  resource: Pick<VersionedResource<Row>, 'uniqueConflict'>,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    const index = brokenUniqueIndex(error);
    const conflict = index === undefined ? undefined : resource.uniqueConflict?.(index);
    throw conflict ?? error;
  }
}
