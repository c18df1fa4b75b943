import { describeOnPostgres } from '../support/databases';
import { createTestApp, createTestStore, installWithTokens, type StoreFixture, suiteHarness } from '../support/harness';
import { type ServerProcess, SERVER_START_MS as START_MS, startServerProcess } from '../support/spawned-server';
import { countTokens, expectAccessRefused, expectAccessWorks, expectOneSharedPair, postToken, refreshBody } from '../support/token-client';

describeOnPostgres('two server processes on one PostgreSQL schema', (testDatabase, url) => {
  const h = suiteHarness(testDatabase, { teardownMs: START_MS });
  h.atEnd(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });
  let store: StoreFixture;
  let servers: ServerProcess[] = [];

  beforeAll(async () => {
    // The processes run on the system clock: issue everything at the real time.
    h.clock.set(Date.now());
    store = await createTestStore(h);
    const { rows } = (await h.db.raw('select current_schema() as schema')) as { rows: { schema: string }[] };
    const schema = rows[0]?.schema as string;
    const started = await Promise.allSettled([
      startServerProcess({ TEST_PG_URL: url, TEST_PG_SCHEMA: schema }),
      startServerProcess({ TEST_PG_URL: url, TEST_PG_SCHEMA: schema }),
    ]);
    servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const failure = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failure) throw failure.reason;
    // Warm both up as a deployed instance is (the request validator compiles on first use), so the
    // burst below tests coordination, not a cold start.
    for (const server of servers) await fetch(`${server.origin}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token' }) });
  }, 2 * START_MS);

  const serverFor = (i: number) => servers[i % servers.length] as ServerProcess;

  it(
    '20 identical concurrent refreshes split across both processes are one operation: exactly one new pair, received by all',
    async () => {
      const client = await createTestApp(h);
      const tokens = await installWithTokens(h, store, client, ['products:read']);
      const before = await countTokens(h.db);

      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => postToken(serverFor(i).origin, client.basic, refreshBody(tokens.refresh_token), i % 4 < 2 ? 'form' : 'json')),
      );

      const pair = expectOneSharedPair(responses);
      expect(await countTokens(h.db)).toBe(before + 2);
      expect(await countTokens(h.db, { operation_id: pair.operation_id })).toBe(2);
      for (const server of servers) {
        await expectAccessWorks(server.origin, store.store.id, pair.access_token);
        await expectAccessRefused(server.origin, store.store.id, tokens.access_token);
      }
    },
    START_MS,
  );
});
