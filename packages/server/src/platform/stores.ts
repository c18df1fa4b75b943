import { randomUUID } from 'node:crypto';
import { ApiError } from '../core/errors';
import { hashPassword } from '../credentials/passwords';
import type { Db } from '../db/transactions';
import { inTransaction } from '../db/transactions';
import type { Deps } from '../services/container';

export interface StoreOwner {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  created_at: number;
}

export interface Store {
  id: string;
  owner_id: string;
  name: string;
  domain: string;
  currency: 'SAR';
  timezone: string;
  locale: 'ar' | 'en';
  routing_state: 'active' | 'migrating';
  route_epoch: number;
  created_at: number;
}

export interface NewStore {
  name: string;
  domain: string;
  owner: { email: string; name: string; password: string };
}

/** Thrown for a platform command that cannot be carried out (bad input, unknown id): the CLI prints it. */
export class PlatformError extends Error {
  override readonly name = 'PlatformError';
}

const normaliseEmail = (email: string) => email.trim().toLowerCase();

export const findStore = (db: Db, id: string): Promise<Store | undefined> => db<Store>('stores').where({ id }).first();

export const listStores = (db: Db): Promise<Store[]> => db<Store>('stores').orderBy('created_at').orderBy('id');

export const findOwnerByEmail = (db: Db, email: string): Promise<StoreOwner | undefined> =>
  db<StoreOwner>('store_owners')
    .where({ email: normaliseEmail(email) })
    .first();

export const findOwner = (db: Db, id: string): Promise<StoreOwner | undefined> => db<StoreOwner>('store_owners').where({ id }).first();

export const storesOwnedBy = (db: Db, ownerId: string): Promise<Store[]> =>
  db<Store>('stores').where({ owner_id: ownerId }).orderBy('created_at').orderBy('id');

/**
 * Creates a store and, if the e-mail is new, its owner (the password is stored as a scrypt hash).
 * An existing owner keeps their password: a second store is simply added to their account.
 */
export async function createStore({ db, clock }: Deps, input: NewStore): Promise<{ store: Store; owner: StoreOwner; ownerCreated: boolean }> {
  const email = normaliseEmail(input.owner.email);
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) throw new PlatformError(`"${input.owner.email}" is not an e-mail address`);
  if (!/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(input.domain))
    throw new PlatformError(`"${input.domain}" is not a domain name`);
  const name = input.name.trim();
  if (name.length === 0 || name.length > 200) throw new PlatformError('The store name must be 1 to 200 characters');
  const existing = await findOwnerByEmail(db, email);
  if (!existing && input.owner.password.length < 10) throw new PlatformError('The owner password must be at least 10 characters');
  const passwordHash = existing ? undefined : await hashPassword(input.owner.password);
  return inTransaction(db, async (trx) => {
    if (await trx('stores').where({ domain: input.domain }).first()) throw new PlatformError(`A store with the domain ${input.domain} exists already`);
    const now = clock.now();
    const owner: StoreOwner = existing ?? {
      id: randomUUID(),
      email,
      name: input.owner.name.trim() || email,
      password_hash: passwordHash as string,
      created_at: now,
    };
    if (!existing) await trx('store_owners').insert(owner);
    const id = randomUUID();
    await trx('stores').insert({ id, owner_id: owner.id, name, domain: input.domain, created_at: now });
    const store = (await findStore(trx, id)) as Store;
    return { store, owner, ownerCreated: !existing };
  });
}

async function requireStore(db: Db, storeId: string): Promise<Store> {
  const store = await findStore(db, storeId);
  if (!store) throw new PlatformError(`No store ${storeId}`);
  return store;
}

/** Starts moving a store: its store API answers 503 STORE_MIGRATING until the move ends. */
export async function startStoreMigration({ db }: Deps, storeId: string): Promise<Store> {
  const store = await requireStore(db, storeId);
  if (store.routing_state === 'migrating') throw new PlatformError(`Store ${storeId} is already migrating`);
  await db('stores').where({ id: storeId }).update({ routing_state: 'migrating' });
  return requireStore(db, storeId);
}

/** Ends the move: the store answers again, under a new `routeEpoch`. */
export async function endStoreMigration({ db }: Deps, storeId: string): Promise<Store> {
  const store = await requireStore(db, storeId);
  if (store.routing_state !== 'migrating') throw new PlatformError(`Store ${storeId} is not migrating`);
  await db('stores')
    .where({ id: storeId })
    .update({ routing_state: 'active', route_epoch: db.raw('route_epoch + 1') });
  return requireStore(db, storeId);
}

/** Seconds a client should wait while a store moves. */
export const MIGRATION_RETRY_SECONDS = 30;

/** The refusal for any request to a store that is moving. */
export const storeMigrating = () =>
  new ApiError('STORE_MIGRATING', 'The store is moving to new infrastructure; retry shortly.', {
    retry_after_seconds: MIGRATION_RETRY_SECONDS,
  });
