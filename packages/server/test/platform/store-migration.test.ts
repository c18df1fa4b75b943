import request from 'supertest';
import { endStoreMigration, startStoreMigration } from '../../src/platform/stores';
import { testDatabases } from '../support/databases';
import { createTestApp, createTestStore, installWithTokens, suiteHarness } from '../support/harness';

describe.each(testDatabases())('the OAuth endpoints while a store moves, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  it('a refresh is 503 STORE_MIGRATING with Retry-After, not a failed operation: the same request works once the move ends', async () => {
    const store = await createTestStore(h);
    const client = await createTestApp(h);
    const tokens = await installWithTokens(h, store, client, ['products:read']);
    const refresh = () =>
      request(h.app).post('/oauth/token').set('Authorization', client.basic).send({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });

    await startStoreMigration(h.services, store.store.id);
    const refused = await refresh();
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 503, code: 'STORE_MIGRATING' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['cache-control']).toBe('no-store');

    await endStoreMigration(h.services, store.store.id);
    const refreshed = await refresh();
    expect(refreshed.status).toBe(200);
    const me = await request(h.app).get(`/stores/${store.store.id}/v1/me`).set('Authorization', `Bearer ${refreshed.body.access_token}`);
    expect(me.body.execution.routeEpoch).toBe(2);
  });
});
