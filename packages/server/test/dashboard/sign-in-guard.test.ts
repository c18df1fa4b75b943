import {
  createSignInGuard,
  FAILURE_RUN_MEMORY_S,
  FIRST_PAIR_BLOCK_S,
  LONGEST_PAIR_BLOCK_S,
  pairBlockSeconds,
  SIGN_IN_LIMITS_TABLE,
} from '../../src/dashboard/sign-in-guard';
import { runHousekeeping } from '../../src/jobs/housekeeping';
import { testDatabases } from '../support/databases';
import { suiteHarness } from '../support/harness';

describe('the blocks of one (e-mail, address) run', () => {
  it('double from 15 minutes and never pass a day', () => {
    const minutes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 20].map((block) => pairBlockSeconds(block) / 60);
    expect(minutes).toEqual([15, 30, 60, 120, 240, 480, 960, 1440, 1440, 1440]);
    expect(FIRST_PAIR_BLOCK_S).toBe(15 * 60);
    expect(LONGEST_PAIR_BLOCK_S).toBe(24 * 60 * 60);
  });
});

describe.each(testDatabases())('the sign-in counters on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  beforeEach(() => {
    jest.spyOn(Date, 'now').mockImplementation(() => h.clock.now());
  });
  afterEach(() => jest.restoreAllMocks());

  const rowsOf = (address: string) => h.db(SIGN_IN_LIMITS_TABLE).where('key', 'like', `%:${address}`);

  it('are deleted by the housekeeping job an hour after they expire; live ones stay', async () => {
    const guard = createSignInGuard(h.services);
    await guard.failed({ email: 'gone@example.com', address: '192.0.2.1' });
    expect(await rowsOf('192.0.2.1')).toHaveLength(2);
    h.clock.advance(FAILURE_RUN_MEMORY_S * 1000 + 60 * 60 * 1000 - 1);
    await guard.failed({ email: 'live@example.com', address: '192.0.2.2' });
    await runHousekeeping(h.services);
    // The address's day-long counter went long ago; the pair's run is kept until an hour past its 90 days.
    expect((await rowsOf('192.0.2.1')).map((row: { key: string }) => row.key.split(':')[0])).toEqual(['sign_in_pair']);

    h.clock.advance(2);
    const sweeps = await runHousekeeping(h.services);
    expect(await rowsOf('192.0.2.1')).toHaveLength(0);
    expect(await rowsOf('192.0.2.2')).toHaveLength(2);
    expect(sweeps.find((sweep) => sweep.table === SIGN_IN_LIMITS_TABLE)?.deleted).toBe(1);
  });

  it('count an IPv6 client by its /64, which one subscriber can roam, and an IPv4-mapped address as the IPv4 one', async () => {
    const guard = createSignInGuard(h.services);
    const email = 'owner-v6@example.com';
    for (let host = 1; host <= 10; host += 1) await guard.failed({ email, address: `2001:db8:aa:1::${host.toString(16)}` });
    expect(await guard.refusal({ email, address: '2001:db8:aa:1:ffff::1' })).toBeDefined();
    expect(await guard.refusal({ email, address: '2001:db8:aa:2::1' })).toBeUndefined();

    const mappedEmail = 'owner-v4@example.com';
    for (let attempt = 0; attempt < 10; attempt += 1) await guard.failed({ email: mappedEmail, address: '::ffff:198.51.100.7' });
    expect(await guard.refusal({ email: mappedEmail, address: '198.51.100.7' })).toBeDefined();
  });
});
