import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { uuidV7 } from '../../src/core/ids';
import { migrateToLatest } from '../../src/db/migrate';
import { DAY_MS, dayOf, keepPartitions, PARTITION_DAYS_AHEAD } from '../../src/db/partitions';
import { partitionsOf } from '../../src/db/postgres/partitions';
import { EXPIRY_RULES } from '../../src/jobs/housekeeping';
import { partitionedTables } from '../../src/services/housekeeping';
import { OUTBOX_KEPT_MS } from '../../src/services/outbox';
import { describeOnPostgres, testDatabases } from '../support/databases';

const TABLES = partitionedTables(EXPIRY_RULES);

/** A store to hang events on (outbox_events.store_id references stores). */
async function aStore(db: Knex): Promise<string> {
  const owner = { id: randomUUID(), email: `owner-${randomUUID()}@example.com`, name: 'Noura', password_hash: 'scrypt$x', created_at: 1 };
  await db('store_owners').insert(owner);
  const store = { id: randomUUID(), owner_id: owner.id, name: 'Oud House', domain: `${randomUUID()}.example.com`, created_at: 1 };
  await db('stores').insert(store);
  return store.id;
}

const anEvent = (storeId: string, at: number, dispatched: boolean) => ({
  id: uuidV7(at),
  store_id: storeId,
  type: 'product.created',
  payload: '{}',
  occurred_at: at,
  dispatched_at: dispatched ? at : null,
});

describe.each(testDatabases('sqlite'))('partitions on $name', (testDatabase) => {
  let db: Knex;
  beforeAll(async () => {
    db = await testDatabase.open();
    await migrateToLatest(db);
  });
  afterAll(() => testDatabase.close());

  it('are none: its tables are plain, and the upkeep does nothing', async () => {
    expect(await keepPartitions(db, TABLES, Date.now())).toEqual([]);
  });
});

describeOnPostgres('partitions by time', (testDatabase) => {
  let db: Knex;
  let storeId: string;
  beforeAll(async () => {
    db = await testDatabase.open();
    await migrateToLatest(db);
    storeId = await aStore(db);
  });
  afterAll(() => testDatabase.close());

  const names = async (table: string) => (await partitionsOf(db, table)).map((partition) => partition.name);
  const dayName = (table: string, day: number) => `${table}_p${new Date(day).toISOString().slice(0, 10).replace(/-/g, '')}`;

  it('are what the expiry rules name: the outbox, the attempts and the idempotency keys, each with a default partition', async () => {
    expect(TABLES.map((table) => [table.table, table.column])).toEqual([
      ['idempotency_keys', 'expires_at'],
      ['outbox_events', 'occurred_at'],
      ['webhook_attempts', 'attempted_at'],
    ]);
    for (const { table } of TABLES) expect(await names(table)).toEqual(expect.arrayContaining([`${table}_p_default`, `${table}_p_legacy`]));
  });

  /** The partitions a statement's plan reads. */
  async function partitionsRead(sql: string, bindings: readonly (string | number)[]): Promise<string[]> {
    const { rows } = await db.raw<{ rows: { 'QUERY PLAN': string }[] }>(`explain ${sql}`, bindings);
    return [...new Set(rows.flatMap((row) => [...row['QUERY PLAN'].matchAll(/ on (\w+_p\w+)/g)].map((match) => match[1] as string)))];
  }

  it('are pruned to one by the hot reads: an event by its id (whose time is its partition key), an idempotency key alive now', async () => {
    const at = dayOf(Date.now()) + 4 * DAY_MS + 5000;
    const event = anEvent(storeId, at, true);
    await db('outbox_events').insert(event);
    expect(
      await partitionsRead('select payload from outbox_events where store_id = ? and id = ? and occurred_at = ?', [storeId, event.id, event.occurred_at]),
    ).toEqual([dayName('outbox_events', dayOf(at))]);
    const now = dayOf(Date.now()) + 5 * DAY_MS;
    const read = await partitionsRead(
      'select * from idempotency_keys where installation_id = ? and operation_id = ? and idempotency_key = ? and expires_at > ?',
      [randomUUID(), 'products.create', 'k', now],
    );
    expect(read).not.toContain('idempotency_keys_p_legacy');
    expect(read).not.toContain(dayName('idempotency_keys', dayOf(now) - DAY_MS));
    // The claim finds each delivery's event by store, id and time: one partition per delivery at run time.
    const attempts = await partitionsRead('select * from webhook_attempts where delivery_id in (1, 2) and attempted_at >= ?', [now]);
    expect(attempts).not.toContain('webhook_attempts_p_legacy');
  });

  it('are made ahead by the upkeep, and dropped whole once past retention unless a row of theirs is still needed', async () => {
    const start = dayOf(Date.now()) + 3 * DAY_MS;
    // Days with events: the first has one not fanned out yet, the second only dispatched ones.
    await db('outbox_events').insert([anEvent(storeId, start + 1000, false), anEvent(storeId, start + DAY_MS + 1000, true)]);
    const later = start + OUTBOX_KEPT_MS + 2 * DAY_MS + 1000;
    const upkeeps = await keepPartitions(db, TABLES, later);
    const outbox = upkeeps.find((upkeep) => upkeep.table === 'outbox_events');
    expect(outbox?.created).toEqual(Array.from({ length: PARTITION_DAYS_AHEAD + 1 }, (_, day) => dayName('outbox_events', dayOf(later) + day * DAY_MS)));
    expect(outbox?.dropped).toEqual(expect.arrayContaining(['outbox_events_p_legacy', dayName('outbox_events', start + DAY_MS)]));
    expect(outbox?.dropped).not.toContain(dayName('outbox_events', start));
    expect(await names('outbox_events')).toContain(dayName('outbox_events', start));
    expect(await db('outbox_events').where('occurred_at', start + DAY_MS + 1000)).toEqual([]);
    // A second run has nothing left to make or drop.
    expect((await keepPartitions(db, TABLES, later)).map((upkeep) => [upkeep.created.length, upkeep.dropped.length])).toEqual([
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
  });
});
