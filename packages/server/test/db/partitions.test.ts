import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { subscribedInstallation } from '../../../../tools/testbed/webhook-rows';
import { uuidV7 } from '../../src/core/ids';
import { engineOfHandle } from '../../src/db/engine';
import { migrateToLatest } from '../../src/db/migrate';
import { DAY_MS, dayOf, PARTITION_DAYS_AHEAD } from '../../src/db/partitions';
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
    expect(await engineOfHandle(db).partitions.keep(db, TABLES, Date.now())).toEqual([]);
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

  it('are what the expiry rules name: the outbox, the attempts, the deliveries and the idempotency keys, each with a default partition', async () => {
    expect(TABLES.map((table) => [table.table, table.column])).toEqual([
      ['idempotency_keys', 'expires_at'],
      ['outbox_events', 'occurred_at'],
      ['webhook_attempts', 'attempted_at'],
      ['webhook_deliveries', 'created_at'],
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
    const upkeeps = await engineOfHandle(db).partitions.keep(db, TABLES, later);
    const outbox = upkeeps.find((upkeep) => upkeep.table === 'outbox_events');
    expect(outbox?.created).toEqual(Array.from({ length: PARTITION_DAYS_AHEAD + 1 }, (_, day) => dayName('outbox_events', dayOf(later) + day * DAY_MS)));
    expect(outbox?.dropped).toEqual(expect.arrayContaining(['outbox_events_p_legacy', dayName('outbox_events', start + DAY_MS)]));
    expect(outbox?.dropped).not.toContain(dayName('outbox_events', start));
    expect(await names('outbox_events')).toContain(dayName('outbox_events', start));
    expect(await db('outbox_events').where('occurred_at', start + DAY_MS + 1000)).toEqual([]);
    // A second run has nothing left to make or drop.
    expect((await engineOfHandle(db).partitions.keep(db, TABLES, later)).map((upkeep) => [upkeep.created.length, upkeep.dropped.length])).toEqual([
      [0, 0],
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
  });

  it('are kept by two leaders racing: each day is made once, and neither fails', async () => {
    const other = await testDatabase.openAnother();
    const at = dayOf(Date.now()) + 60 * DAY_MS;
    const [first, second] = await Promise.all([engineOfHandle(db).partitions.keep(db, TABLES, at), engineOfHandle(other).partitions.keep(other, TABLES, at)]);
    for (const [index, table] of TABLES.entries()) {
      const made = [...(first[index]?.created ?? []), ...(second[index]?.created ?? [])];
      const expected = Array.from({ length: PARTITION_DAYS_AHEAD + 1 }, (_, day) => dayName(table.table, dayOf(at) + day * DAY_MS));
      expect(made.sort()).toEqual(expected);
      expect(await names(table.table)).toEqual(expect.arrayContaining(expected));
    }
  });

  it('drop a day only under the lock that proved it holds nothing to send: an event dated in the past, committed meanwhile, stays', async () => {
    const day = dayOf(Date.now()) + 90 * DAY_MS;
    const at = day + OUTBOX_KEPT_MS + 2 * DAY_MS;
    await engineOfHandle(db).partitions.keep(db, TABLES, day); // the day and the days after it exist
    // Every other expired day dropped first, the day kept by an event not fanned out, which then is.
    const waiting = anEvent(storeId, day + 500, false);
    await db('outbox_events').insert(waiting);
    await engineOfHandle(db).partitions.keep(db, TABLES, at);
    await db('outbox_events').where({ id: waiting.id }).update({ dispatched_at: at });
    expect(await names('outbox_events')).toContain(dayName('outbox_events', day));
    // svc simulate's kind of write: an event of an expired day, not fanned out yet, still uncommitted when the upkeep looks.
    const writer = await testDatabase.openAnother();
    const event = anEvent(storeId, day + 1000, false);
    let upkeep: Promise<unknown> | undefined;
    await writer.transaction(async (trx) => {
      await trx('outbox_events').insert(event);
      upkeep = engineOfHandle(db).partitions.keep(db, TABLES, at);
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    await upkeep;
    expect(await db('outbox_events').where({ id: event.id })).toHaveLength(1);
    expect(await names('outbox_events')).toContain(dayName('outbox_events', day));
  });

  it('drop a day of deliveries once each is final and its event past retention; a pending one keeps its day', async () => {
    const start = dayOf(Date.now()) + 120 * DAY_MS;
    await engineOfHandle(db).partitions.keep(db, TABLES, start);
    const { subscriptionId: subscription } = await subscribedInstallation(db, storeId, start);
    const delivery = (at: number, finished: boolean) => ({
      store_id: storeId,
      subscription_id: subscription,
      event_id: uuidV7(at),
      event_type: 'product.created',
      kind: 'event',
      state: finished ? 'succeeded' : 'pending',
      attempts: finished ? 1 : 0,
      next_attempt_at: at,
      created_at: at,
      event_occurred_at: at,
      finished_at: finished ? at : null,
    });
    await db('webhook_deliveries').insert([delivery(start + 1000, false), delivery(start + DAY_MS + 1000, true), delivery(start + DAY_MS + 2000, true)]);
    const later = start + OUTBOX_KEPT_MS + 2 * DAY_MS + 1000;
    const deliveries = (await engineOfHandle(db).partitions.keep(db, TABLES, later)).find((upkeep) => upkeep.table === 'webhook_deliveries');
    expect(deliveries?.dropped).toContain(dayName('webhook_deliveries', start + DAY_MS));
    expect(deliveries?.dropped).not.toContain(dayName('webhook_deliveries', start));
    expect(await db('webhook_deliveries').where({ subscription_id: subscription }).select('state')).toEqual([{ state: 'pending' }]);
  });

  it('take a claimed delivery’s writes to its one day: its whole key prunes every other partition', async () => {
    const day = dayOf(Date.now()) + 200 * DAY_MS;
    await engineOfHandle(db).partitions.keep(db, TABLES, day);
    const read = await partitionsRead('update webhook_deliveries set attempts = 1 where store_id = ? and id = ? and created_at = ? and claim_token = ?', [
      storeId,
      1,
      day + 5,
      randomUUID(),
    ]);
    expect(read).toEqual([dayName('webhook_deliveries', day)]);
  });
});
