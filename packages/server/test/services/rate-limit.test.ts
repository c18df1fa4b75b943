import type { Knex } from 'knex';
import type { ApiError } from '../../src/core/errors';
import { engineOfHandle } from '../../src/db/engine';
import { migrateToLatest } from '../../src/db/migrate';
import { errorHeaders, rateLimitHeaders } from '../../src/http/protocol-headers';
import { API_QUOTAS_TABLE, type Quota, type RateLimiter, rateLimited, rateLimiter } from '../../src/services/rate-limit';
import { describeOnPostgres, type TestDatabase, testDatabases } from '../support/databases';
import { shiftableSystemTime } from '../support/system-time';

const quota: Quota = { policy: 'installation', limit: 3, windowMs: 5000 };

/** As the router spends a quota: the RateLimit fields of the answer, and the 429 when refused. */
async function spend(limiter: RateLimiter, key: string): Promise<{ headers: Record<string, string>; refusal?: ApiError }> {
  const decision = await limiter.take(quota, key);
  return { headers: rateLimitHeaders(quota, decision), ...(decision.allowed ? {} : { refusal: rateLimited(quota, decision) }) };
}

/** Runs `work` on the test database, migrated unless `migrated` is false, and closes the database after. */
async function onDatabase(testDatabase: TestDatabase, work: (db: Knex) => Promise<void>, migrated = true): Promise<void> {
  const db = await testDatabase.open();
  try {
    if (migrated) await migrateToLatest(db);
    await work(db);
  } finally {
    await testDatabase.close();
  }
}

describe.each(testDatabases())('API quotas on $name', (testDatabase) => {
  const systemTime = shiftableSystemTime();

  it('allow the limit per window, refuse the next with 429, Retry-After and the RateLimit fields, and reset when the window ends', async () => {
    await onDatabase(testDatabase, async (db) => {
      const limiter = rateLimiter(db, engineOfHandle(db).quotas.counters);
      const allowed = [];
      for (let i = 0; i < 3; i++) allowed.push(await spend(limiter, 'inst-1'));
      expect(allowed.map(({ headers }) => headers.RateLimit)).toEqual(['"installation";r=2;t=5', '"installation";r=1;t=5', '"installation";r=0;t=5']);
      expect(allowed.map(({ refusal }) => refusal)).toEqual([undefined, undefined, undefined]);
      expect(allowed[0]?.headers['RateLimit-Policy']).toBe('"installation";q=3;w=5');
      systemTime.advance(1000);
      for (let refused = 0; refused < 2; refused++) {
        const { refusal, headers } = await spend(limiter, 'inst-1');
        expect(headers.RateLimit).toBe('"installation";r=0;t=4');
        expect({ code: refusal?.code, status: refusal?.status, retry: refusal && errorHeaders(refusal, {})['Retry-After'] }).toEqual({
          code: 'RATE_LIMITED',
          status: 429,
          retry: '4',
        });
      }
      expect((await spend(limiter, 'inst-2')).refusal).toBeUndefined(); // another key has its own quota
      systemTime.advance(4000);
      expect((await spend(limiter, 'inst-1')).headers.RateLimit).toBe('"installation";r=2;t=5');
    });
  });

  it('refuse a window that is not whole seconds (the RateLimit fields count seconds)', async () => {
    await onDatabase(
      testDatabase,
      async (db) => {
        await expect(rateLimiter(db, engineOfHandle(db).quotas.counters).take({ ...quota, windowMs: 1500 }, 'odd')).rejects.toThrow(/whole seconds/);
      },
      false,
    );
  });
});

describe.each(testDatabases('sqlite'))('API quotas on $name (one server process)', (testDatabase) => {
  it('are counted in memory: a request costs no statement', async () => {
    await onDatabase(testDatabase, async (db) => {
      const statements: string[] = [];
      db.on('query', ({ sql }: { sql: string }) => statements.push(sql));
      const limiter = rateLimiter(db, engineOfHandle(db).quotas.counters);
      await limiter.take(quota, 'memory');
      expect(statements).toEqual([]);
      expect(limiter.folded(quota)).toBeUndefined(); // nothing to fold a spend into
      expect(await db(API_QUOTAS_TABLE).count({ n: '*' })).toEqual([{ n: 0 }]);
    });
  });
});

describeOnPostgres('API quotas on PostgreSQL (several instances)', (testDatabase) => {
  const systemTime = shiftableSystemTime();

  it("count a spend folded into the caller's own statement together with `take`'s, in the same row", async () => {
    await onDatabase(testDatabase, async (db) => {
      const limiter = rateLimiter(db, engineOfHandle(db).quotas.counters);
      const fold = limiter.folded(quota);
      if (!fold) throw new Error('PostgreSQL folds quota spends');
      /** One spend for `key` when `live` is 'yes', as the bearer token's statement makes it. */
      const foldedSpend = async (key: string, live: 'yes' | 'no') => {
        const sql = `with source as (select :key as key, :live as live), spent as (${fold.sql('source', 'source.key', "source.live = 'yes'")})
          select points, expire from spent`;
        const { rows } = (await db.raw(sql, { key, live, ...fold.bindings() })) as { rows: { points: number; expire: number }[] };
        const [row] = rows;
        return row && fold.decisionOf(row.points, row.expire);
      };
      expect((await limiter.take(quota, 'folded')).remaining).toBe(2);
      expect(await foldedSpend('folded', 'no')).toBeUndefined(); // the condition does not hold: nothing spent
      expect(await foldedSpend('folded', 'yes')).toEqual({ allowed: true, remaining: 1, resetSeconds: 5 });
      expect((await limiter.take(quota, 'folded')).remaining).toBe(0);
      expect(await foldedSpend('folded', 'yes')).toEqual({ allowed: false, remaining: 0, resetSeconds: 5 });
      expect(await db(API_QUOTAS_TABLE).where({ key: 'installation:folded' }).first()).toMatchObject({ points: 4 });
      systemTime.advance(5000); // the window ends: the next spend opens a new one
      expect(await foldedSpend('folded', 'yes')).toEqual({ allowed: true, remaining: 2, resetSeconds: 5 });
    });
  });

  it('are shared by the instances of one database: the limit holds across them, and a refused key is refused from memory', async () => {
    await onDatabase(testDatabase, async (db) => {
      const other = await testDatabase.openAnother();
      const [first, second] = [rateLimiter(db, engineOfHandle(db).quotas.counters), rateLimiter(other, engineOfHandle(other).quotas.counters)];
      const decisions = await Promise.all([first, second, first, second, first, second].map((limiter) => limiter.take(quota, 'shared')));
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(3);
      // Once an instance has seen the key over its limit, it answers from memory: the count in the database stops growing.
      for (const limiter of [first, second]) expect((await limiter.take(quota, 'shared')).allowed).toBe(false);
      const counted = async () => (await db(API_QUOTAS_TABLE).where({ key: 'installation:shared' }).first()).points;
      const before = await counted();
      expect(before).toBeGreaterThan(quota.limit);
      for (const limiter of [first, second, first]) expect((await limiter.take(quota, 'shared')).allowed).toBe(false);
      expect(await counted()).toBe(before);
    });
  });

  it('fail the request (no quota is guessed) when the database cannot be reached', async () => {
    await onDatabase(testDatabase, async () => {
      const other = await testDatabase.openAnother();
      const limiter = rateLimiter(other, engineOfHandle(other).quotas.counters);
      await other.destroy();
      await expect(limiter.take(quota, 'unreachable')).rejects.toThrow();
    });
  });
});
