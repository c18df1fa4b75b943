import { ManualClock } from '../../src/core/clock';
import type { ApiError } from '../../src/core/errors';
import { migrateToLatest } from '../../src/db/migrate';
import { errorHeaders, rateLimitHeaders } from '../../src/http/protocol-headers';
import { databaseCounter, memoryCounter, type Quota, type RateLimiter, rateLimited, rateLimiter } from '../../src/platform/rate-limit';
import { testDatabases } from '../support/databases';

const quota: Quota = { policy: 'installation', limit: 3, windowMs: 5000 };

/** As the router spends a quota: the RateLimit fields of the answer, and the 429 when refused. */
async function spend(limiter: RateLimiter, key: string): Promise<{ headers: Record<string, string>; refusal?: ApiError }> {
  const decision = await limiter.take(quota, key);
  return { headers: rateLimitHeaders(quota, decision), ...(decision.allowed ? {} : { refusal: rateLimited(quota, decision) }) };
}

describe('fixed-window quotas', () => {
  it('allow the limit per window, refuse the next with 429, Retry-After and the RateLimit fields, and reset with the window', async () => {
    const clock = new ManualClock(Date.parse('2026-11-22T09:00:01Z'));
    const limiter = rateLimiter(memoryCounter(), clock);
    const allowed = [];
    for (let i = 0; i < 3; i++) allowed.push(await spend(limiter, 'inst-1'));
    expect(allowed.map(({ headers }) => headers.RateLimit)).toEqual(['"installation";r=2;t=4', '"installation";r=1;t=4', '"installation";r=0;t=4']);
    expect(allowed.map(({ refusal }) => refusal)).toEqual([undefined, undefined, undefined]);
    expect(allowed[0]?.headers['RateLimit-Policy']).toBe('"installation";q=3;w=5');
    const { refusal: refused, headers } = await spend(limiter, 'inst-1');
    expect(headers.RateLimit).toBe('"installation";r=0;t=4');
    expect({ code: refused?.code, status: refused?.status, retry: refused && errorHeaders(refused, {})['Retry-After'] }).toEqual({
      code: 'RATE_LIMITED',
      status: 429,
      retry: '4',
    });
    expect((await spend(limiter, 'inst-2')).refusal).toBeUndefined(); // another key has its own quota
    clock.advance(4000);
    expect((await spend(limiter, 'inst-1')).headers.RateLimit).toBe('"installation";r=2;t=5');
  });
});

describe.each(testDatabases())('quotas in the database (several instances) on $name', (testDatabase) => {
  it('are shared by two limiters on one database', async () => {
    const db = await testDatabase.open();
    try {
      await migrateToLatest(db);
      const clock = new ManualClock();
      const first = rateLimiter(databaseCounter(db), clock);
      const second = rateLimiter(databaseCounter(db), clock);
      const decisions = await Promise.all([first, second, first, second, first].map((limiter) => limiter.take(quota, 'shared')));
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(3);
      clock.advance(5000);
      expect((await second.take(quota, 'shared')).allowed).toBe(true);
    } finally {
      await testDatabase.close();
    }
  });
});
