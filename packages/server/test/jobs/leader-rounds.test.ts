import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { freshPostgresDatabase } from '../../../../tools/testbed/postgres-database';
import { until } from '../../../../tools/testbed/until';
import { ManualClock } from '../../src/core/clock';
import { uuidV7 } from '../../src/core/ids';
import { createDatabase } from '../../src/db/connection';
import { type Leadership, LeadershipLost } from '../../src/db/locks';
import { migrateToLatest } from '../../src/db/migrate';
import { DAY_MS } from '../../src/db/partitions';
import { type Rounds, runHousekeeping, scheduleHousekeeping } from '../../src/jobs/housekeeping';
import { SWEEP_LIMITS } from '../../src/services/housekeeping';
import { OUTBOX_KEPT_MS } from '../../src/services/outbox';
import { depsOf, leadershipOn } from '../support/databases';
import { describeWith, POSTGRES } from '../support/requirements';
import { startTcpProxy } from '../support/tcp-proxy';

const SVC = 0x737663;
const LEADER_KEY = 2;
const HOUR_MS = 60 * 60 * 1000;

/** knex's warnings of the sessions these tests end on purpose. */
const quiet = { warn: () => undefined, debug: () => undefined };

/**
 * One leader among the instances on a database (docs/decisions/0086-one-leader.md), on PostgreSQL:
 * a database of its own, since the leader's advisory lock is the database's, and other suites on
 * the shared one may hold it.
 */
describeWith(POSTGRES, 'one leader for the fleet-wide jobs', () => {
  let url: string;
  let drop: () => Promise<void>;
  let admin: Knex;
  let storeId: string;
  const opened: Knex[] = [];
  const leaderships: Leadership[] = [];

  const open = (at = url) => {
    const db = createDatabase({ databaseUrl: at, dataDir: '' }, { log: quiet });
    opened.push(db);
    return db;
  };
  const lead = (db: Knex, retryMs: number, changes: string[] = [], name = '') => {
    const leadership = leadershipOn(db, { retryMs, onChange: (held) => changes.push(`${name} ${held ? 'leads' : 'no more'}`) });
    leaderships.push(leadership);
    return leadership;
  };
  /** The backend holding the leader's lock on this database, if any. */
  const leaderPid = async (): Promise<number | undefined> => {
    const { rows } = await admin.raw<{ rows: { pid: number }[] }>(
      `select pid from pg_locks where locktype = 'advisory' and classid = ? and objid = ? and objsubid = 2 and granted
       and database = (select oid from pg_database where datname = current_database())`,
      [SVC, LEADER_KEY],
    );
    return rows[0]?.pid;
  };
  const terminateLeader = async () => {
    const pid = await leaderPid();
    if (pid === undefined) throw new Error('nobody leads');
    await admin.raw('select pg_terminate_backend(?)', [pid]);
    return pid;
  };
  const backendPid = async (db: Knex) => ((await db.raw('select pg_backend_pid() as pid')) as { rows: { pid: number }[] }).rows[0]?.pid as number;

  beforeAll(async () => {
    ({ url, drop } = await freshPostgresDatabase(process.env.TEST_DATABASE_URL as string));
    admin = open();
    await migrateToLatest(admin);
    const owner = { id: randomUUID(), email: `owner-${randomUUID()}@example.com`, name: 'Noura', password_hash: 'scrypt$x', created_at: 1 };
    await admin('store_owners').insert(owner);
    storeId = randomUUID();
    await admin('stores').insert({ id: storeId, owner_id: owner.id, name: 'Oud House', domain: `${randomUUID()}.example.com`, created_at: 1 });
  }, 60_000);
  afterEach(async () => {
    for (const leadership of leaderships.splice(0)) await leadership.stop();
  });
  afterAll(async () => {
    for (const db of opened) await db.destroy();
    await drop?.();
  });

  it('runs a round on the session that holds the lead, and no round where it does not lead', async () => {
    const first = lead(open(), 20);
    expect(await first.tried()).toBe(true);
    const second = lead(open(), 20);
    expect(await second.tried()).toBe(false);
    const holder = await leaderPid();
    expect(await first.round(backendPid)).toBe(holder);
    let ran = false;
    expect(
      await second.round(async () => {
        ran = true;
      }),
    ).toBeUndefined();
    expect(ran).toBe(false);
  });

  it("stops acting when its session is terminated mid-round: the round's next statement fails, and another instance takes over", async () => {
    const changes: string[] = [];
    // The first would try again only after a minute: the lead goes to the second.
    const first = lead(open(), 60_000, changes, 'first');
    expect(await first.tried()).toBe(true);
    const second = lead(open(), 20, changes, 'second');
    await admin.raw('create table if not exists leader_witness (instance text not null, at bigint not null)');
    const cut = first.round(async (db) => {
      await db('leader_witness').insert({ instance: 'first', at: 1 });
      // The database ends the leader's session (an administrator, a failover, a restart) mid-round.
      await terminateLeader();
      await until(async () => second.held, { everyMs: 10 });
      // The round goes on: its next statement must not run beside the new leader.
      await db('leader_witness').insert({ instance: 'first', at: 2 });
    });
    await expect(cut).rejects.toBeInstanceOf(LeadershipLost);
    expect(first.held).toBe(false);
    expect(
      await second.round((db) =>
        db('leader_witness')
          .insert({ instance: 'second', at: 3 })
          .then(() => 'acted'),
      ),
    ).toBe('acted');
    expect(await admin('leader_witness').orderBy('at').select('instance', 'at')).toEqual([
      { instance: 'first', at: 1 },
      { instance: 'second', at: 3 },
    ]);
    expect(changes).toEqual(['first leads', 'first no more', 'second leads']);
    // The old leader's next round runs nothing: it does not lead.
    expect(await first.round(async () => 'acted')).toBeUndefined();
    await admin.raw('drop table leader_witness');
  });

  it('gives the lead up when its session stops answering (a partition), and no other leads until the server ends that session', async () => {
    const proxy = await startTcpProxy(url);
    try {
      const changes: string[] = [];
      const first = lead(open(proxy.urlOf(url)), 60_000, changes, 'first');
      expect(await first.tried()).toBe(true);
      const second = lead(open(), 20, changes, 'second');
      proxy.partition();
      // The check before the round does not answer: cut at its deadline, the round not run.
      const started = performance.now();
      let ran = false;
      expect(
        await first.round(async () => {
          ran = true;
        }),
      ).toBeUndefined();
      expect(ran).toBe(false);
      expect(performance.now() - started).toBeGreaterThanOrEqual(4900);
      expect(first.held).toBe(false);
      // The server still holds the lost session's lock, so the other instance cannot lead yet.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(second.held).toBe(false);
      // The network ends the connection (keepalive gives up): the server frees the lock, and the other leads.
      proxy.heal();
      await until(async () => second.held, { everyMs: 20 });
      expect(changes).toEqual(['first leads', 'first no more', 'second leads']);
    } finally {
      await proxy.close();
    }
  }, 30_000);

  it('races two instances through 36 simulated days with the lead moving: no round runs on two at once, none fails, every expired row is gone', async () => {
    const clock = new ManualClock(Date.now());
    const rounds: { instance: string; start: number; end: number; ok: boolean }[] = [];
    const problems: string[] = [];
    const stopped: string[] = [];
    /** The instance's rounds, timed, each checked to have ended on the session it began on, still leading. */
    const tracked = (instance: string, leadership: Leadership): Rounds => ({
      round: (work) =>
        leadership.round(async (db) => {
          const start = performance.now();
          const pid = await backendPid(db);
          try {
            const result = await work(db);
            const held = (await db.raw(
              `select pg_backend_pid() = ? and exists (select 1 from pg_locks where locktype = 'advisory' and pid = pg_backend_pid() and classid = ? and objid = ? and granted) as held`,
              [pid, SVC, LEADER_KEY],
            )) as { rows: { held: boolean }[] };
            if (!held.rows[0]?.held) problems.push(`${instance}: a round ended off the leader's session`);
            rounds.push({ instance, start, end: performance.now(), ok: true });
            return result;
          } catch (error) {
            rounds.push({ instance, start, end: performance.now(), ok: false });
            throw error;
          }
        }),
    });
    const instances = ['a', 'b'].map((instance) => {
      const db = open();
      const leadership = lead(db, 20);
      const schedule = scheduleHousekeeping(() => runHousekeeping(depsOf(db, clock), SWEEP_LIMITS, tracked(instance, leadership)), {
        everyMs: 5,
        leader: leadership,
        log: (line) => {
          if (line.startsWith('Housekeeping stopped')) stopped.push(`${instance}: ${line}`);
        },
        logError: (line) => problems.push(`${instance}: ${line}`),
      });
      return { leadership, schedule };
    });

    // Every three simulated hours: events (fanned out, so they expire with their day), then at least
    // one housekeeping run at that hour. Every three days the leader's session is ended.
    let inserted = 0;
    const leaders = new Set<number>();
    const STEP_MS = 3 * HOUR_MS;
    for (let step = 1; step <= (36 * DAY_MS) / STEP_MS; step += 1) {
      clock.advance(STEP_MS);
      const at = clock.now();
      await admin('outbox_events').insert(
        Array.from({ length: 3 }, (_, index) => ({
          id: uuidV7(at + index),
          store_id: storeId,
          type: 'product.created',
          payload: '{}',
          occurred_at: at + index,
          dispatched_at: at + index,
        })),
      );
      inserted += 3;
      const done = rounds.filter((round) => round.ok).length;
      await until(async () => rounds.filter((round) => round.ok).length >= done + 2, { everyMs: 2 });
      if (step % ((3 * DAY_MS) / STEP_MS) === 0) leaders.add(await terminateLeader());
    }
    for (const { schedule } of instances) await schedule.stop();

    expect(problems).toEqual([]);
    // The lead moved, and both instances ran rounds.
    expect(leaders.size).toBe(12);
    expect(new Set(rounds.filter((round) => round.ok).map((round) => round.instance))).toEqual(new Set(['a', 'b']));
    // No two rounds that acted overlapped in time (a round cut by the loss of its lead may end while
    // the next leader's begins: it acted no more after its session was gone).
    const acted = rounds.filter((round) => round.ok).sort((x, y) => x.start - y.start);
    for (let index = 1; index < acted.length; index += 1) {
      const [before, after] = [acted[index - 1], acted[index]] as [(typeof acted)[number], (typeof acted)[number]];
      expect({ index, overlap: after.start < before.end }).toEqual({ index, overlap: false });
    }
    for (const line of stopped) expect(line).toMatch(/^[ab]: Housekeeping stopped: this process no longer leads \(.+\); the next leader runs it$/);
    // Every expired event is gone, by a dropped day or by the row sweep; the rest are kept.
    const kept = Number((await admin('outbox_events').count<{ count: string }[]>({ count: '*' }))[0]?.count);
    const expected = (
      await admin('outbox_events')
        .where('occurred_at', '>', clock.now() - OUTBOX_KEPT_MS)
        .count<{ count: string }[]>({ count: '*' })
    )[0]?.count;
    expect(kept).toBe(Number(expected));
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(inserted);
  }, 240_000);
});
