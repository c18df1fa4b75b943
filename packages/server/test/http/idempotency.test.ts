import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ManualClock } from '../../src/core/clock';
import { ApiError } from '../../src/core/errors';
import { DAY_MS, dayOf } from '../../src/db/partitions';
import {
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_TTL_MS,
  type IdempotencyScope,
  isReplayedError,
  requestHashOf,
  runIdempotently,
  type WorkResponse,
} from '../../src/http/idempotency';
import type { Deps } from '../../src/services/container';
import { depsOf, testDatabases } from '../support/databases';
import { anotherInstance, apiErrorFrom, openStoreApiDatabase } from '../support/store-api';

const PATH = '/stores/7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6/v1/products';
const EFFECTS = 'idempotency_test_effects';

interface Created {
  id: string;
  name: string;
}

const hashOf = (body: object) => requestHashOf('POST', PATH, body);

/** A fresh key of a fresh installation for `products.create` with the body `{name}`. */
function freshScope(name = 'Oud Royal'): IdempotencyScope {
  return { storeId: randomUUID(), installationId: randomUUID(), operationId: 'products.create', key: randomUUID(), requestHash: hashOf({ name }) };
}

/** The work of a create: records its effect (a row of the scratch table) and answers 201 with an ETag. */
const create =
  (scope: IdempotencyScope, name = 'Oud Royal') =>
  async (trx: Knex | Knex.Transaction): Promise<WorkResponse<Created>> => {
    const id = randomUUID();
    await trx(EFFECTS).insert({ id, idempotency_key: scope.key });
    return { status: 201, body: { id, name }, headers: { ETag: `"p1.1.${'x'.repeat(43)}"` } };
  };

/** A gate the test opens later: work that waits on it stays in flight. */
function gate(): { open: () => void; passed: Promise<void> } {
  let open = () => {};
  const passed = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, passed };
}

describe('requestHashOf', () => {
  it('is the same for the same body with its keys in another order, at every depth', () => {
    expect(requestHashOf('POST', PATH, { name: 'Oud', price: { amount: 10, currency: 'SAR' } })).toBe(
      requestHashOf('post', PATH, { price: { currency: 'SAR', amount: 10 }, name: 'Oud' }),
    );
  });

  it('differs for another method, path or body', () => {
    const hashes = [
      requestHashOf('POST', PATH, { name: 'Oud' }),
      requestHashOf('PATCH', PATH, { name: 'Oud' }),
      requestHashOf('POST', `${PATH}/1`, { name: 'Oud' }),
      requestHashOf('POST', PATH, { name: 'Musk' }),
      requestHashOf('POST', PATH, { name: 'Oud', tags: [] }),
      requestHashOf('POST', PATH, [{ name: 'Oud' }]),
    ];
    expect(new Set(hashes).size).toBe(hashes.length);
    for (const hash of hashes) expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe.each(testDatabases())('Idempotency-Key on $name', (testDatabase) => {
  let db: Knex;

  beforeAll(async () => {
    db = await openStoreApiDatabase(testDatabase);
    await db.schema.createTable(EFFECTS, (t) => {
      t.uuid('id').primary();
      t.string('idempotency_key', 128).notNullable();
    });
  });
  afterAll(() => testDatabase.close());

  const depsAt = (clock = new ManualClock()): Deps => depsOf(db, clock);
  const effectsOf = async (scope: IdempotencyScope): Promise<number> => {
    const [row] = await db(EFFECTS).where({ idempotency_key: scope.key }).count({ count: '*' });
    return Number(row?.count);
  };

  it('replays the first response, marked replayed, without running the work again', async () => {
    const deps = depsAt();
    const scope = freshScope();
    const first = await runIdempotently(deps, scope, create(scope));
    expect(first).toMatchObject({ status: 201, body: { name: 'Oud Royal' }, replayed: false });
    const again = await runIdempotently(deps, scope, create(scope));
    expect(again).toEqual({ ...first, replayed: true });
    expect(await effectsOf(scope)).toBe(1);
  });

  it('is IDEMPOTENCY_KEY_REUSED (422) for the same key with another body', async () => {
    const deps = depsAt();
    const scope = freshScope('Oud Royal');
    await runIdempotently(deps, scope, create(scope));
    const error = await apiErrorFrom(runIdempotently(deps, { ...scope, requestHash: hashOf({ name: 'Musk' }) }, create(scope, 'Musk')));
    expect(error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', status: 422 });
    expect(await effectsOf(scope)).toBe(1);
  });

  it('is IDEMPOTENCY_KEY_IN_PROGRESS (409) for a repeat from another instance while the first is in flight', async () => {
    const clock = new ManualClock();
    const scope = freshScope();
    const entered = gate();
    const release = gate();
    // On SQLite an open transaction holds the file's only write lock, and the other instance's claim
    // would wait for it (the next test): there the first is in flight outside a transaction.
    const inTransaction = testDatabase.name !== 'sqlite';
    const first = runIdempotently(
      depsOf(db, clock),
      scope,
      async (trx) => {
        entered.open();
        await release.passed;
        return create(scope)(trx);
      },
      { inTransaction },
    );
    await entered.passed;
    const other = anotherInstance(db);
    try {
      const error = await apiErrorFrom(runIdempotently(depsOf(other, clock), scope, create(scope)));
      expect(error).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_PROGRESS', status: 409 });
      release.open();
      const stored = await first;
      expect(await runIdempotently(depsOf(other, clock), scope, create(scope))).toEqual({ ...stored, replayed: true });
    } finally {
      release.open();
      await other.destroy();
    }
    expect(await effectsOf(scope)).toBe(1);
  });

  // PostgreSQL locks rows, not the database: there the repeat meets the claim at once (the test before).
  if (testDatabase.name === 'sqlite')
    it("on SQLite, a repeat from another instance waits for the first's transaction, then gets its response replayed", async () => {
      const clock = new ManualClock();
      const scope = freshScope();
      const entered = gate();
      const release = gate();
      const first = runIdempotently(depsOf(db, clock), scope, async (trx) => {
        entered.open();
        await release.passed;
        return create(scope)(trx);
      });
      await entered.passed;
      const other = anotherInstance(db);
      try {
        let settled = false;
        const repeat = runIdempotently(depsOf(other, clock), scope, create(scope)).finally(() => {
          settled = true;
        });
        // Many of the repeat's tries for the lock go by meanwhile (one a millisecond).
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(settled).toBe(false);
        release.open();
        const stored = await first;
        expect(await repeat).toEqual({ ...stored, replayed: true });
      } finally {
        release.open();
        await other.destroy();
      }
      expect(await effectsOf(scope)).toBe(1);
    });

  it('runs the work exactly once for 50 concurrent requests with one key; each gets the stored response or 409', async () => {
    const deps = depsAt();
    const scope = freshScope();
    const outcomes = await Promise.allSettled(Array.from({ length: 50 }, () => runIdempotently(deps, scope, create(scope))));
    expect(await effectsOf(scope)).toBe(1);
    const stored = await runIdempotently(deps, scope, create(scope));
    const answered = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    expect(answered.filter((response) => !response.replayed)).toEqual([{ ...stored, replayed: false }]);
    for (const response of answered) expect(response).toEqual({ ...stored, replayed: response.replayed });
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_PROGRESS', status: 409 });
    }
  });

  it('keeps a key to one live row across midnight, for concurrent requests of two instances on either side of it', async () => {
    // On PostgreSQL the two sides' rows would fall in two partitions (by expires_at), where no unique index reaches.
    const midnight = dayOf(Date.now()) + DAY_MS;
    const before = depsAt(new ManualClock(midnight - 1));
    const after: Deps = depsOf(anotherInstance(db), new ManualClock(midnight + 1));
    const scope = freshScope();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, (_, index) => runIdempotently(index % 2 === 0 ? before : after, scope, create(scope))),
    );
    expect(await effectsOf(scope)).toBe(1);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled' && !outcome.value.replayed)).toHaveLength(1);
    expect(await db('idempotency_keys').where({ idempotency_key: scope.key }).select('store_id')).toEqual([{ store_id: scope.storeId }]);
    expect(await runIdempotently(after, scope, create(scope))).toMatchObject({ status: 201, replayed: true });
  });

  it('stores an ApiError outcome and throws the same error again on a repeat, without running the work again', async () => {
    const deps = depsAt();
    const scope = freshScope();
    let runs = 0;
    const refuse = async (trx: Knex.Transaction): Promise<WorkResponse<Created>> => {
      runs += 1;
      await create(scope)(trx); // undone: the refusal rolls the work back
      throw new ApiError('CATEGORY_NOT_FOUND', 'No category named Perfumes in this store.', {
        details: [{ location: 'body', field: '/category', message: 'no such category' }],
      });
    };
    const first = await apiErrorFrom(runIdempotently(deps, scope, refuse));
    const again = await apiErrorFrom(runIdempotently(deps, scope, refuse));
    expect(runs).toBe(1);
    expect(await effectsOf(scope)).toBe(0);
    expect(again).toBeInstanceOf(ApiError);
    expect({ code: again.code, status: again.status, message: again.message, extras: again.extras }).toEqual({
      code: first.code,
      status: first.status,
      message: first.message,
      extras: first.extras,
    });
    expect({ first: isReplayedError(first), again: isReplayedError(again) }).toEqual({ first: false, again: true });
  });

  it('does not store a failure that is not an ApiError: a retry runs the work', async () => {
    const deps = depsAt();
    const scope = freshScope();
    const crash = async (trx: Knex.Transaction): Promise<WorkResponse<Created>> => {
      await create(scope)(trx);
      throw new Error('connection reset');
    };
    await expect(runIdempotently(deps, scope, crash)).rejects.toThrow('connection reset');
    expect(await effectsOf(scope)).toBe(0);
    expect(await runIdempotently(deps, scope, create(scope))).toMatchObject({ status: 201, replayed: false });
    expect(await effectsOf(scope)).toBe(1);
  });

  it('replays for 24 hours; from then on the key is fresh again, even for another body', async () => {
    const clock = new ManualClock();
    const scope = freshScope();
    await runIdempotently(depsOf(db, clock), scope, create(scope));
    clock.advance(IDEMPOTENCY_TTL_MS - 1);
    expect(await runIdempotently(depsOf(db, clock), scope, create(scope))).toMatchObject({ replayed: true });
    clock.advance(1);
    const musk = { ...scope, requestHash: hashOf({ name: 'Musk' }) };
    expect(await runIdempotently(depsOf(db, clock), musk, create(scope, 'Musk'))).toMatchObject({ body: { name: 'Musk' }, replayed: false });
    expect(await runIdempotently(depsOf(db, clock), musk, create(scope, 'Musk'))).toMatchObject({ body: { name: 'Musk' }, replayed: true });
    expect(await effectsOf(scope)).toBe(2);
  });

  it('never shares a key between installations or operations', async () => {
    const deps = depsAt();
    const scope = freshScope();
    const scopes = [scope, { ...scope, installationId: randomUUID() }, { ...scope, operationId: 'categories.create' }];
    for (const each of scopes) expect(await runIdempotently(deps, each, create(scope))).toMatchObject({ replayed: false });
    expect(await effectsOf(scope)).toBe(3);
  });

  it('lets a repeat take over a claim abandoned by a crashed instance once its lease ran out', async () => {
    const clock = new ManualClock();
    const scope = freshScope();
    await db('idempotency_keys').insert({
      store_id: scope.storeId,
      id: randomUUID(),
      installation_id: scope.installationId,
      operation_id: scope.operationId,
      idempotency_key: scope.key,
      request_hash: scope.requestHash,
      state: 'in_progress',
      lease_until: clock.now() + IDEMPOTENCY_LEASE_MS,
      created_at: clock.now(),
      expires_at: clock.now() + IDEMPOTENCY_TTL_MS,
    });
    expect(await apiErrorFrom(runIdempotently(depsOf(db, clock), scope, create(scope)))).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_PROGRESS' });
    clock.advance(IDEMPOTENCY_LEASE_MS);
    expect(await runIdempotently(depsOf(db, clock), scope, create(scope))).toMatchObject({ status: 201, replayed: false });
    expect(await runIdempotently(depsOf(db, clock), scope, create(scope))).toMatchObject({ status: 201, replayed: true });
    expect(await effectsOf(scope)).toBe(1);
  });
});
