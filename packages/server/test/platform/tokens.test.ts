import { randomUUID } from 'node:crypto';
import { ACCESS_SECONDS } from '../../src/core/limits';
import { hashSecret } from '../../src/credentials/secrets';
import { livenessOfFacts, livenessOfToken, TOKEN_FACTS_COLUMNS, type TokenFacts, type TokenLiveness } from '../../src/platform/tokens';
import { me } from '../support/auth-steps';
import { testDatabases } from '../support/databases';
import { createTestApp, createTestStore, installWithTokens, suiteHarness } from '../support/harness';

/**
 * The live-token rule, written once in SQL (platform/tokens `tokenLivenessSql`) and judged in the
 * database wherever a token is checked: the bearer check, a refresh, introspection. Its checks in
 * order: revoked (the token or its grant), expired, of an earlier installation.
 */
describe.each(testDatabases())('the live-token rule on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  /** A fresh installation's access token: its row id, the presented token, and its grant and installation. */
  async function issued() {
    const store = await createTestStore(h);
    const client = await createTestApp(h, { required: ['products:read'], optional: [] });
    const tokens = await installWithTokens(h, store, client, ['products:read']);
    const row = await h
      .db('tokens')
      .where({ token_hash: hashSecret(tokens.access_token) })
      .first();
    return { store, tokens, tokenId: row.id as string, grantId: row.grant_id as string, installationId: row.installation_id as string };
  }

  /** The rule as a statement that reads the token judges it, and as the rule over its facts read before: they agree. */
  async function judged(tokenId: string, at = h.clock.now()): Promise<TokenLiveness | undefined> {
    const read = await livenessOfToken(h.db, tokenId, at);
    const facts = await h
      .db('tokens as t')
      .join('grants as g', 'g.id', 't.grant_id')
      .leftJoin('installations as i', 'i.id', 't.installation_id')
      .where('t.id', tokenId)
      .first<TokenFacts | undefined>(h.db.raw(TOKEN_FACTS_COLUMNS));
    expect(facts ? await livenessOfFacts(h.db, facts, at) : undefined).toBe(read);
    return read;
  }
  const inTransaction = (tokenId: string): Promise<TokenLiveness | undefined> => h.db.transaction((trx) => livenessOfToken(trx, tokenId, h.clock.now()));

  it('judges a token live until the instant it expires, inside a transaction as outside', async () => {
    const { tokenId } = await issued();
    expect(await judged(tokenId)).toBe('live');
    expect(await inTransaction(tokenId)).toBe('live');
    expect(await judged(tokenId, h.clock.now() + ACCESS_SECONDS * 1000 - 1)).toBe('live');
    expect(await judged(tokenId, h.clock.now() + ACCESS_SECONDS * 1000)).toBe('expired');
    expect(await judged(randomUUID())).toBeUndefined();
  });

  it('checks in order: revoked before expired, expired before an earlier installation', async () => {
    const { tokenId, grantId, installationId } = await issued();
    const later = h.clock.now() + ACCESS_SECONDS * 1000;
    await h.db('installations').where({ id: installationId }).increment('generation', 1);
    expect(await judged(tokenId)).toBe('earlier_installation');
    expect(await judged(tokenId, later)).toBe('expired');
    await h.db('grants').where({ id: grantId }).update({ revoked_at: h.clock.now() });
    expect(await judged(tokenId, later)).toBe('revoked');
    expect(await inTransaction(tokenId)).toBe('revoked');
  });

  it('ends the tokens of an uninstalled app, and the bearer check answers each state with its own message', async () => {
    const revoked = await issued();
    await h.db('tokens').where({ id: revoked.tokenId }).update({ revoked_at: h.clock.now() });
    const gone = await issued();
    await h.db('installations').where({ id: gone.installationId }).update({ status: 'uninstalled' });
    expect(await judged(gone.tokenId)).toBe('earlier_installation');
    const messages = await Promise.all(
      [revoked, gone].map(async ({ store, tokens }) => (await me(h.app, store.store.id, tokens.access_token)).body.error?.message),
    );
    expect(messages).toEqual(['The access token was revoked.', 'The access token belongs to an earlier installation of the app.']);
  });
});
