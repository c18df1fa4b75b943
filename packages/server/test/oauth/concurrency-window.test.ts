import { ApiError } from '../../src/core/errors';
import { requestTokens } from '../../src/oauth/token-endpoint';
import { testDatabases } from '../support/databases';
import { createTestApp, createTestStore, installWithTokens, suiteHarness } from '../support/harness';

describe.each(testDatabases())('what counts as an identical concurrent request, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  it('is judged by when the request arrived: one that arrived in the window but was reached late shares the pair; one that arrived after it is a resend', async () => {
    const store = await createTestStore(h);
    const client = await createTestApp(h);
    const tokens = await installWithTokens(h, store, client, ['products:read']);
    const body = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token };
    const arrived = h.clock.now();
    const first = await requestTokens(h.services, client.app.id, body, arrived);

    h.clock.advance(3000); // a busy instance reaches a request of the same burst 3 s later
    const late = await requestTokens(h.services, client.app.id, body, arrived + 500);
    expect(late).toEqual(first);

    const resent = requestTokens(h.services, client.app.id, body, h.clock.now());
    await expect(resent).rejects.toBeInstanceOf(ApiError);
    await expect(resent).rejects.toMatchObject({ code: 'REFRESH_ALREADY_USED' });
  });
});
