import knex, { type Knex } from 'knex';
import pg from 'pg';
import { answerWithin, type PgDeadlineClient, type PgPooledClient } from '../../src/db/postgres/internals';
import { PreparedStatements } from '../../src/db/postgres/prepared-statements';
import { describeOnPostgres } from '../support/databases';

/**
 * The client-side deadline of a replica's statements (db/postgres/internals.ts `answerWithin`,
 * docs/decisions/0085-replica-deadlines.md), on PostgreSQL: a statement that does not answer in
 * time fails at the deadline in each form node-postgres takes, and its connection is cut, never
 * handed out again. A sleeping statement stands in for a server that stopped answering (the
 * frozen replica itself is test/db/replicas.test.ts's).
 */
describeOnPostgres('statement deadlines on a pool', (_testDatabase, url) => {
  const DEADLINE_MS = 300;
  let db: Knex;

  beforeAll(() => {
    db = knex({
      client: 'pg',
      connection: url,
      // knex's warning of each cut connection the pool drops: expected here.
      log: { warn: () => undefined },
      pool: {
        min: 0,
        max: 1,
        afterCreate: (client: PgDeadlineClient, done: (error: Error | null, client: PgPooledClient) => void) => {
          answerWithin(client, DEADLINE_MS);
          done(null, client);
        },
      },
    });
  });
  afterAll(() => db.destroy());

  const backendPid = async () => ((await db.raw('select pg_backend_pid() as pid')) as { rows: { pid: number }[] }).rows[0]?.pid;

  /** Fails at the deadline, not at the statement's end, and leaves the pool a fresh connection. */
  const cutAtTheDeadline = async (late: () => Promise<unknown>) => {
    const before = await backendPid();
    const started = performance.now();
    await expect(late()).rejects.toThrow(`The statement did not answer within ${DEADLINE_MS} ms: the connection is cut`);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
    expect(waited).toBeLessThan(2000);
    const after = await backendPid();
    expect(after).toEqual(expect.any(Number));
    expect(after).not.toBe(before);
  };

  it('cuts a statement run through knex (a config and a callback)', async () => {
    await cutAtTheDeadline(() => db.raw('select pg_sleep(3)'));
  });

  it('cuts a prepared run (a Submittable with its callback)', async () => {
    const statements = new PreparedStatements({ named: true });
    await cutAtTheDeadline(() => statements.rows(db, 'select pg_sleep(3)', []));
    // The statements of a connection that answers in time are left alone.
    expect(await statements.rows(db, 'select 1 as one', [])).toEqual([{ one: 1 }]);
  });

  it("cuts a statement whose answer is node-postgres's promise", async () => {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    await client.connect();
    answerWithin(client as unknown as PgDeadlineClient, DEADLINE_MS);
    try {
      expect((await client.query('select 2 as two')).rows).toEqual([{ two: 2 }]);
      const started = performance.now();
      await expect(client.query('select pg_sleep(3)')).rejects.toThrow(`did not answer within ${DEADLINE_MS} ms`);
      expect(performance.now() - started).toBeLessThan(2000);
      expect((client as unknown as PgPooledClient).__knex__disposed).toBeInstanceOf(Error);
    } finally {
      await client.end().catch(() => undefined);
    }
  });

  it('leaves a statement that answers in time, however long the connection then stays idle', async () => {
    const pid = await backendPid();
    await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS * 2));
    expect(await backendPid()).toBe(pid);
    expect(((await db.raw('select pg_sleep(0.1), 3 as three')) as { rows: { three: number }[] }).rows[0]?.three).toBe(3);
    expect(await backendPid()).toBe(pid);
  });
});
