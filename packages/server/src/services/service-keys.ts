import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { type Clock, systemClock } from '../core/clock';

/** The length of every service key, in bytes (HMAC-SHA256 keys). */
export const SERVICE_KEY_BYTES = 32;
const MAX_NAME_LENGTH = 64;

interface ServiceKeyRow {
  name: string;
  key_material: string;
  created_at: number | null;
}

/** The server's named secrets, read once per process (the services container holds them). */
export interface ServiceKeys {
  /**
   * The named 32-byte server secret (`etag`, `cursor`, …). Created on first use by whichever
   * instance gets there first (insert … on conflict do nothing, then read back the winner), so
   * every instance on one database signs and checks with the same key. Kept in memory afterwards:
   * a key never changes once created.
   */
  get(name: string): Promise<Buffer>;
}

/** The service keys of `db`; `clock` only stamps `created_at`. */
export function serviceKeys(db: Knex, clock: Clock = systemClock): ServiceKeys {
  const keys = new Map<string, Promise<Buffer>>();
  return {
    get(name) {
      if (name.length === 0 || name.length > MAX_NAME_LENGTH) throw new Error(`A service key name has 1 to ${MAX_NAME_LENGTH} characters`);
      const known = keys.get(name);
      if (known) return known;
      const loading = loadOrCreate(db, name, clock);
      keys.set(name, loading);
      loading.catch(() => keys.delete(name)); // a failed read is retried on the next call
      return loading;
    },
  };
}

async function loadOrCreate(db: Knex, name: string, clock: Clock): Promise<Buffer> {
  await db('service_keys')
    .insert({ name, key_material: randomBytes(SERVICE_KEY_BYTES).toString('base64url'), created_at: clock.now() })
    .onConflict('name')
    .ignore();
  const row = await db<ServiceKeyRow>('service_keys').where({ name }).first();
  if (!row) throw new Error(`Service key ${name} is missing after it was created`);
  const key = Buffer.from(row.key_material, 'base64url');
  if (key.length !== SERVICE_KEY_BYTES) throw new Error(`Service key ${name} is not ${SERVICE_KEY_BYTES} bytes`);
  return key;
}
