import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { SERVICE_KEY_BYTES, type ServiceKeys, serviceKeys } from '../../src/services/service-keys';
import { testDatabases } from '../support/databases';
import { anotherInstance, openStoreApiDatabase } from '../support/store-api';

describe.each(testDatabases())('service keys on $name', (testDatabase) => {
  let db: Knex;
  let other: Knex;
  /** The keys of one instance, as its services container holds them. */
  const keysOf = new Map<Knex, ServiceKeys>();
  const serviceKey = (instance: Knex, name: string) => {
    if (!keysOf.has(instance)) keysOf.set(instance, serviceKeys(instance));
    return (keysOf.get(instance) as ServiceKeys).get(name);
  };

  beforeAll(async () => {
    db = await openStoreApiDatabase(testDatabase);
    other = anotherInstance(db);
  });
  afterAll(async () => {
    await other.destroy();
    await testDatabase.close();
  });

  const freshName = () => `test-${randomUUID()}`;

  it('creates a 32-byte key on first use, stored as base64url, and returns the same key afterwards', async () => {
    const name = freshName();
    const key = await serviceKey(db, name);
    expect(key).toHaveLength(SERVICE_KEY_BYTES);
    const row = await db('service_keys').where({ name }).first();
    expect(row.key_material).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(row.key_material, 'base64url').equals(key)).toBe(true);
    expect((await serviceKey(db, name)).equals(key)).toBe(true);
  });

  it('gives each name its own key', async () => {
    const [etag, cursor] = await Promise.all([serviceKey(db, freshName()), serviceKey(db, freshName())]);
    expect(etag.equals(cursor)).toBe(false);
  });

  it('agrees across instances on one database, even when they create the key at the same moment', async () => {
    const name = freshName();
    const keys = await Promise.all([db, other, db, other].map((instance) => serviceKey(instance, name)));
    for (const key of keys) expect(key.equals(keys[0] as Buffer)).toBe(true);
    expect(await db('service_keys').where({ name }).count({ count: '*' })).toEqual([{ count: 1 }]);
  });

  it('reads a key once per instance and keeps it in memory', async () => {
    const name = freshName();
    const key = await serviceKey(db, name);
    await db('service_keys').where({ name }).delete();
    expect((await serviceKey(db, name)).equals(key)).toBe(true);
  });
});
