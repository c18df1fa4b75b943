import { randomUUID } from 'node:crypto';
import { hashSecret } from '../../src/credentials/secrets';
import { currentSession, SESSION_MS, startSession } from '../../src/dashboard/sessions';
import { IDEMPOTENCY_TTL_MS, requestHashOf, runIdempotently } from '../../src/http/idempotency';
import { describeSweeps, runHousekeeping, scheduleHousekeeping } from '../../src/jobs/housekeeping';
import { CODE_MS, CONSENT_MS } from '../../src/oauth/consent';
import { issueLaunch, LAUNCH_MS, verifyLaunch } from '../../src/oauth/launch';
import { lookupOperation } from '../../src/oauth/operations';
import { requestTokens } from '../../src/oauth/token-endpoint';
import { uninstall } from '../../src/platform/installations';
import { REFRESH_MS } from '../../src/platform/tokens';
import { LATE_USE_EXPLAINED_MS, type TableSweep } from '../../src/services/housekeeping';
import { API_QUOTAS_TABLE, QUOTA_COUNTERS_KEPT_MS } from '../../src/services/rate-limit';
import { testDatabases } from '../support/databases';
import {
  type AppFixture,
  approveAndGetCode,
  createTestApp,
  createTestStore,
  REDIRECT_URI,
  RFC7636_VERIFIER,
  type StoreFixture,
  suiteHarness,
} from '../support/harness';
import { apiErrorFrom } from '../support/store-api';

const SCOPES = ['products:read'];

describe.each(testDatabases())('housekeeping on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let store: StoreFixture;
  let client: AppFixture;

  beforeAll(async () => {
    store = await createTestStore(h);
    client = await createTestApp(h, { required: SCOPES, optional: [] });
  });

  const sweep = () => runHousekeeping(h.services);
  const present = async (table: string, where: Record<string, unknown>) => (await h.db(table).where(where).first()) !== undefined;

  /** Runs housekeeping at `deadline - 1` (the row stays) and at `deadline` (it is gone). */
  async function expectKeptUntil(table: string, where: Record<string, unknown>, deadline: number): Promise<void> {
    h.clock.set(deadline - 1);
    await sweep();
    expect(await present(table, where)).toBe(true);
    h.clock.set(deadline);
    await sweep();
    expect(await present(table, where)).toBe(false);
  }

  const exchange = (code: string, verifier = RFC7636_VERIFIER) =>
    requestTokens(h.services, client.app.id, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier });

  /** A fresh code and the row it made, not yet exchanged. */
  async function newCode(): Promise<{ code: string; row: { id: string; expires_at: number } }> {
    const code = await approveAndGetCode(h, store, client, SCOPES);
    const row = await h
      .db('authorization_codes')
      .where({ code_hash: hashSecret(code) })
      .first();
    return { code, row };
  }

  describe('idempotency keys', () => {
    const scope = () => ({
      storeId: randomUUID(),
      installationId: randomUUID(),
      operationId: 'products.create',
      key: randomUUID(),
      requestHash: requestHashOf('POST', '/p', {}),
    });
    const work = async () => ({ status: 201, body: {} });

    it('are kept for their 24 hours and deleted when they end', async () => {
      const key = scope();
      const createdAt = h.clock.now();
      await runIdempotently(h.services, key, work);
      await expectKeptUntil('idempotency_keys', { idempotency_key: key.key }, createdAt + IDEMPOTENCY_TTL_MS);
    });

    it('a key used again after its row was deleted runs anew, as an expired key does', async () => {
      const key = scope();
      await runIdempotently(h.services, key, work);
      h.clock.advance(IDEMPOTENCY_TTL_MS);
      await sweep();
      expect(await runIdempotently(h.services, key, work)).toMatchObject({ replayed: false });
    });
  });

  describe('dashboard sessions', () => {
    it('are kept for their 12 hours and deleted when they end', async () => {
      const startedAt = h.clock.now();
      const { token } = await startSession(h.services, store.owner.id);
      h.clock.set(startedAt + SESSION_MS - 1);
      await sweep();
      expect(await currentSession(h.services, `svc_session=${token}`)).toMatchObject({ owner: { id: store.owner.id } });
      await expectKeptUntil('dashboard_sessions', { session_hash: hashSecret(token) }, startedAt + SESSION_MS);
    });
  });

  describe('pending authorization requests', () => {
    it('are kept a day past their 10 minutes, so a late answer is told it expired', async () => {
      const createdAt = h.clock.now();
      await newCode();
      const [request] = await h.db('authorization_requests').where({ app_id: client.app.id, created_at: createdAt });
      await expectKeptUntil('authorization_requests', { id: request.id }, createdAt + CONSENT_MS + LATE_USE_EXPLAINED_MS);
    });
  });

  describe('authorization codes', () => {
    it('that were never used are kept a day past their 120 seconds', async () => {
      const { row } = await newCode();
      expect(row.expires_at).toBe(h.clock.now() + CODE_MS);
      await expectKeptUntil('authorization_codes', { id: row.id }, row.expires_at + LATE_USE_EXPLAINED_MS);
    });

    it('that were used are kept while their grant has a live token, so that reusing one still revokes what it issued', async () => {
      const { code, row } = await newCode();
      const tokens = await exchange(code);
      h.clock.set(row.expires_at + LATE_USE_EXPLAINED_MS * 3);
      await sweep();
      expect(await present('authorization_codes', { id: row.id })).toBe(true);

      expect(await apiErrorFrom(exchange(code, 'another-verifier-'.repeat(3)))).toMatchObject({ code: 'INVALID_CODE' });
      const refresh = await h
        .db('tokens')
        .where({ token_hash: hashSecret(tokens.refresh_token) })
        .first();
      expect(refresh.revoked_at).toBe(h.clock.now());
      await sweep();
      expect(await present('authorization_codes', { id: row.id })).toBe(false); // nothing left to revoke
    });

    it('that were used are deleted once every token of their grant has expired', async () => {
      const issuedAt = h.clock.now();
      const { code, row } = await newCode();
      await exchange(code);
      await expectKeptUntil('authorization_codes', { id: row.id }, issuedAt + REFRESH_MS);
    });

    it('that were used are deleted once their grant was revoked by an uninstall', async () => {
      const { code, row } = await newCode();
      const tokens = await exchange(code);
      h.clock.set(row.expires_at + LATE_USE_EXPLAINED_MS);
      await sweep();
      expect(await present('authorization_codes', { id: row.id })).toBe(true);
      await uninstall(h.services, tokens.installation_id);
      await sweep();
      expect(await present('authorization_codes', { id: row.id })).toBe(false);
    });
  });

  describe('launch tokens', () => {
    it('are kept a day past their 5 minutes, so a late verification is told it expired', async () => {
      const issuedAt = h.clock.now();
      const launchUrl = await issueLaunch(h.services, store.store.id, client.app.id);
      const token = new URL(launchUrl).searchParams.get('svc_launch_token') as string;
      const where = { token_hash: hashSecret(token) };
      h.clock.set(issuedAt + LAUNCH_MS + LATE_USE_EXPLAINED_MS - 1);
      await sweep();
      expect(await apiErrorFrom(verifyLaunch(h.services, client.app.id, launchUrl))).toMatchObject({
        code: 'INVALID_LAUNCH',
        message: expect.stringContaining('expired'),
      });
      await expectKeptUntil('launch_tokens', where, issuedAt + LAUNCH_MS + LATE_USE_EXPLAINED_MS);
    });
  });

  describe('token operations', () => {
    it('that issued tokens are kept as long as their tokens, and lost-response lookup keeps working', async () => {
      const { code } = await newCode();
      const body = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: RFC7636_VERIFIER } as const;
      const tokens = await requestTokens(h.services, client.app.id, body);
      h.clock.advance(REFRESH_MS * 2);
      await sweep();
      expect(await present('token_operations', { id: tokens.operation_id })).toBe(true);
      expect(await apiErrorFrom(lookupOperation(h.services, client.app.id, body))).toMatchObject({
        code: 'RESULT_UNAVAILABLE_REAUTHORIZE',
        extras: { operation_id: tokens.operation_id },
      });
    });

    it('that issued nothing are kept 30 days (the longest a credential in their body lives), then deleted', async () => {
      const { code } = await newCode();
      const body = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: 'wrong-verifier-'.repeat(4) } as const;
      const createdAt = h.clock.now();
      expect(await apiErrorFrom(requestTokens(h.services, client.app.id, body))).toMatchObject({ code: 'PKCE_MISMATCH' });
      h.clock.set(createdAt + REFRESH_MS - 1);
      await sweep();
      expect(await lookupOperation(h.services, client.app.id, body)).toMatchObject({ state: 'FAILED', error_code: 'PKCE_MISMATCH' });
      h.clock.set(createdAt + REFRESH_MS);
      await sweep();
      expect(await apiErrorFrom(lookupOperation(h.services, client.app.id, body))).toMatchObject({ code: 'OPERATION_NOT_FOUND' });
    });
  });

  describe('API quota counters', () => {
    it('are deleted a minute after their window ends; a counter whose window runs is kept', async () => {
      const key = `installation:${randomUUID()}`;
      const expire = h.clock.now() + 5000;
      await h.db(API_QUOTAS_TABLE).insert({ key, points: 3, expire });
      await expectKeptUntil(API_QUOTAS_TABLE, { key }, expire + QUOTA_COUNTERS_KEPT_MS);
    });
  });

  describe('batches', () => {
    /** The DELETE statements `run` sends for one table. */
    async function deletesOf<T>(table: string, run: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
      const statements: string[] = [];
      const listener = ({ sql }: { sql: string }) => {
        if (new RegExp(`^delete from [\`"]${table}[\`"]`, 'i').test(sql)) statements.push(sql);
      };
      h.db.on('query', listener);
      try {
        return { result: await run(), statements };
      } finally {
        h.db.removeListener('query', listener);
      }
    }

    async function counters(count: number, expire: number): Promise<string[]> {
      const keys = Array.from({ length: count }, () => `batch:${randomUUID()}`);
      await h.db.batchInsert(
        API_QUOTAS_TABLE,
        keys.map((key) => ({ key, points: 1, expire })),
        500,
      );
      return keys;
    }

    const remaining = async (keys: string[]) => Number((await h.db(API_QUOTAS_TABLE).whereIn('key', keys).count({ n: '*' }))[0]?.n);
    const sweepOf = (sweeps: TableSweep[], table: string) => sweeps.find((each) => each.table === table);

    it('delete a backlog larger than one batch in one run, 1,000 rows a statement, and leave live rows alone', async () => {
      await sweep();
      const expired = await counters(2500, h.clock.now() - QUOTA_COUNTERS_KEPT_MS);
      const live = await counters(3, h.clock.now() - QUOTA_COUNTERS_KEPT_MS + 1);
      const { result, statements } = await deletesOf(API_QUOTAS_TABLE, sweep);
      expect(sweepOf(result, API_QUOTAS_TABLE)).toEqual({ table: API_QUOTAS_TABLE, deleted: 2500, statements: 3, capped: false });
      expect(statements).toHaveLength(3);
      expect(await remaining(expired)).toBe(0);
      expect(await remaining(live)).toBe(3);
    });

    it('stop at the per-run cap and leave the rest to the next run', async () => {
      await sweep();
      const expired = await counters(5, h.clock.now() - QUOTA_COUNTERS_KEPT_MS);
      const limits = { batchRows: 2, maxRowsPerTable: 3 };
      const first = await deletesOf(API_QUOTAS_TABLE, () => runHousekeeping(h.services, limits));
      expect(sweepOf(first.result, API_QUOTAS_TABLE)).toEqual({ table: API_QUOTAS_TABLE, deleted: 3, statements: 2, capped: true });
      expect(first.statements).toHaveLength(2);
      expect(await remaining(expired)).toBe(2);
      const second = await runHousekeeping(h.services, limits);
      expect(sweepOf(second, API_QUOTAS_TABLE)).toMatchObject({ deleted: 2, capped: false });
      expect(await remaining(expired)).toBe(0);
    });
  });

  it('sweeps every table whose rows expire', async () => {
    expect((await sweep()).map((each) => each.table).sort()).toEqual([
      'api_quota_counters',
      'authorization_codes',
      'authorization_requests',
      'dashboard_sessions',
      'idempotency_keys',
      'launch_tokens',
      'outbox_events',
      'sign_in_limits',
      'token_operations',
      'webhook_attempts',
      'webhook_deliveries',
    ]);
  });
});

describe('the housekeeping timer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const sweeps = (deleted: number): TableSweep[] => [{ table: 'idempotency_keys', deleted, statements: 1, capped: false }];

  it('runs every interval, logs what it deleted, and logs a failed run without stopping', async () => {
    const log: string[] = [];
    const errors: string[] = [];
    const outcomes = [async () => sweeps(3), async () => Promise.reject(new Error('database is locked'))];
    const run = jest.fn(() => (outcomes.shift() ?? (async () => sweeps(0)))());
    const schedule = scheduleHousekeeping(run, { everyMs: 1000, log: (line) => log.push(line), logError: (line) => errors.push(line) });
    await jest.advanceTimersByTimeAsync(999);
    expect(run).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(3001);
    expect(run).toHaveBeenCalledTimes(4);
    expect(log).toEqual(['Housekeeping deleted 3 idempotency_keys']);
    expect(errors).toEqual(['Housekeeping failed (next run in 1 s): database is locked']);
    await schedule.stop();
  });

  it('does not start a run while the last one is still going, and stop waits for it', async () => {
    let finish = () => {};
    const run = jest.fn(() => new Promise<TableSweep[]>((resolve) => (finish = () => resolve(sweeps(1)))));
    const log: string[] = [];
    const schedule = scheduleHousekeeping(run, { everyMs: 1000, log: (line) => log.push(line), logError: () => {} });
    await jest.advanceTimersByTimeAsync(5000);
    expect(run).toHaveBeenCalledTimes(1);
    let stopped = false;
    const stopping = schedule.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish();
    await stopping;
    expect(log).toEqual(['Housekeeping deleted 1 idempotency_keys']);
    await jest.advanceTimersByTimeAsync(5000);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('runs only in the process that leads: another instance sweeps nothing until it takes the lead', async () => {
    const leader = { held: true };
    const other = { held: false };
    const [leaderRun, otherRun] = [jest.fn(async () => sweeps(0)), jest.fn(async () => sweeps(0))];
    const schedules = [
      scheduleHousekeeping(leaderRun, { everyMs: 1000, leader, log: () => {}, logError: () => {} }),
      scheduleHousekeeping(otherRun, { everyMs: 1000, leader: other, log: () => {}, logError: () => {} }),
    ];
    await jest.advanceTimersByTimeAsync(3000);
    expect([leaderRun.mock.calls.length, otherRun.mock.calls.length]).toEqual([3, 0]);
    // The leader stops; the other instance takes the lead (holdLeadership) and its next tick sweeps.
    leader.held = false;
    other.held = true;
    await jest.advanceTimersByTimeAsync(2000);
    expect([leaderRun.mock.calls.length, otherRun.mock.calls.length]).toEqual([3, 2]);
    for (const schedule of schedules) await schedule.stop();
  });

  it('describes a run that stopped at the cap', () => {
    expect(describeSweeps([{ table: 'launch_tokens', deleted: 100, statements: 1, capped: true }, ...sweeps(0)])).toBe(
      'deleted 100 launch_tokens (more remain in launch_tokens)',
    );
    expect(describeSweeps(sweeps(0))).toBeUndefined();
  });
});
