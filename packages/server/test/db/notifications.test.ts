import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { until as poll } from '../../../../tools/testbed/until';
import { createDatabase } from '../../src/db/connection';
import { engineOfHandle } from '../../src/db/engine';
import { announceWebhookWork, WEBHOOK_WORK_CHANNEL } from '../../src/db/notifications';
import { testDatabases } from '../support/databases';

/** Lets every callback already due run: an announcement is heard after the commit's own continuation. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe.each(testDatabases())('webhook work announced on $name', (testDatabase) => {
  let db: Knex;
  let other: Knex;

  beforeAll(async () => {
    db = await testDatabase.open();
    other = await testDatabase.openAnother();
  });
  afterAll(() => testDatabase.close());

  const until = (condition: () => boolean, what: string) => poll(condition, { what, timeoutMs: 10_000, everyMs: 10, rethrow: true });

  /** A listener on `db` and how often it was told, counted from when it listens. */
  async function listening(): Promise<{ heard: () => number; stop: () => Promise<void> }> {
    let calls = 0;
    const stop = engineOfHandle(db).webhookWork.listen(() => {
      calls += 1;
    }, {});
    // PostgreSQL tells a listener once when its connection starts listening: what was committed
    // before was not heard.
    if (testDatabase.name === 'postgres') await until(() => calls === 1, 'the connection listens');
    const from = calls;
    return { heard: () => calls - from, stop };
  }

  it("is heard by another pool's listener once the transaction commits, once per commit, and never after a rollback", async () => {
    const listener = await listening();
    try {
      await other.transaction(async (trx) => {
        await trx.transaction(async (nested) => {
          await announceWebhookWork(nested);
          await announceWebhookWork(nested);
        });
        await settled();
        // Before the outer commit a dispatcher would look for rows it cannot see yet.
        expect(listener.heard()).toBe(0);
        await announceWebhookWork(trx);
      });
      await until(() => listener.heard() >= 1, 'the commit is heard');
      await other
        .transaction(async (trx) => {
          await announceWebhookWork(trx);
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      await announceWebhookWork(other);
      // Notifications arrive in commit order: the rolled-back one would have come before this one.
      await until(() => listener.heard() >= 2, 'the write outside a transaction is heard');
      await settled();
      expect(listener.heard()).toBe(2);
    } finally {
      await listener.stop();
    }
  });

  it('is not heard after the listener stopped, nor from another database', async () => {
    const listener = await listening();
    const elsewhere = await anotherDatabase(testDatabase.name, db);
    try {
      await elsewhere.announce();
      await announceWebhookWork(other);
      await until(() => listener.heard() >= 1, 'the own database is heard');
      await settled();
      expect(listener.heard()).toBe(1);
      await listener.stop();
      await announceWebhookWork(other);
      await settled();
      expect(listener.heard()).toBe(1);
    } finally {
      await elsewhere.close();
    }
  });
});

/**
 * Announcing in another database: on SQLite another file, on PostgreSQL another schema of the same
 * database (the channel spans the database; the schema in the payload tells them apart).
 */
async function anotherDatabase(name: 'sqlite' | 'postgres', db: Knex): Promise<{ announce: () => Promise<void>; close: () => Promise<void> }> {
  if (name === 'postgres')
    return { announce: async () => void (await db.raw('select pg_notify(?, ?)', [WEBHOOK_WORK_CHANNEL, 'another_schema'])), close: async () => undefined };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-'));
  const elsewhere = createDatabase({ databaseUrl: undefined, dataDir: dir });
  return {
    announce: () => announceWebhookWork(elsewhere),
    close: async () => {
      await elsewhere.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
