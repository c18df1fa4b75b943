import { until } from '../../../../tools/testbed/until';
import type { Leadership } from '../../src/db/locks';
import { describeOnPostgres, leadershipOn, testDatabases } from '../support/databases';

describe.each(testDatabases('sqlite'))('the leader on $name', (testDatabase) => {
  it('is the one server process, at once', async () => {
    const db = await testDatabase.open();
    try {
      const changes: boolean[] = [];
      const leadership = leadershipOn(db, { onChange: (held) => changes.push(held) });
      expect(leadership.held).toBe(true);
      expect(changes).toEqual([true]);
      await leadership.stop();
    } finally {
      await testDatabase.close();
    }
  });
});

describeOnPostgres('the leader on PostgreSQL (several instances)', (testDatabase) => {
  it('is one instance at a time; when it stops, another takes the lead at its next try', async () => {
    const db = await testDatabase.open();
    const leaderships: Leadership[] = [];
    try {
      const other = await testDatabase.openAnother();
      const changes: string[] = [];
      const lead = (name: string, pool: typeof db) =>
        leadershipOn(pool, { retryMs: 20, onChange: (held) => changes.push(`${name} ${held ? 'leads' : 'no more'}`) });
      const [first, second] = [lead('first', db), lead('second', other)];
      leaderships.push(first, second);
      await until(async () => first.held || second.held);
      const [leader, follower] = first.held ? [first, second] : [second, first];
      expect(follower.held).toBe(false);
      const leaderName = leader === first ? 'first' : 'second';
      const followerName = leader === first ? 'second' : 'first';

      await leader.stop();
      await until(async () => follower.held);
      expect(leader.held).toBe(false);
      expect(changes).toEqual([`${leaderName} leads`, `${leaderName} no more`, `${followerName} leads`]);
    } finally {
      for (const leadership of leaderships) await leadership.stop();
      await testDatabase.close();
    }
  });

  it('is lost with its connection: the lock goes with the session, and another instance takes it', async () => {
    const db = await testDatabase.open();
    const leaderships: Leadership[] = [];
    try {
      const other = await testDatabase.openAnother();
      const first = leadershipOn(db, { retryMs: 20 });
      leaderships.push(first);
      await until(async () => first.held);
      const second = leadershipOn(other, { retryMs: 20 });
      leaderships.push(second);
      // The leader's session is ended from outside (a restarted database, a cut network).
      await db.raw("select pg_terminate_backend(pid) from pg_locks where locktype = 'advisory' and classid = ? and objid = ? and granted", [0x737663, 2]);
      await until(async () => second.held);
      await until(async () => !first.held);
    } finally {
      for (const leadership of leaderships) await leadership.stop();
      await testDatabase.close();
    }
  });
});
