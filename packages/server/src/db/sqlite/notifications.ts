import type { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import type { WorkListener } from '../engine';
import type { Db } from '../transactions';
import { outermostOf, settledOf } from './internals';

/**
 * SQLite has no notifications between connections: the dispatchers of the writing process are told
 * after the commit, and another process's writes (the CLI) are found by their poll. Pools opened on
 * one file in one process (another instance in a test) share the announcements (files.ts).
 */
export class SqliteAnnouncements {
  /** Transactions that announced already: one announcement tells everything a commit wrote. */
  private readonly announced = new WeakSet<object>();

  constructor(private readonly local: EventEmitter) {}

  async announce(db: Db): Promise<void> {
    if (!db.isTransaction) {
      this.local.emit('work');
      return;
    }
    const outermost = outermostOf(db as Knex.Transaction);
    if (this.announced.has(outermost)) return;
    this.announced.add(outermost);
    settledOf(outermost).then(
      () => this.local.emit('work'),
      () => undefined,
    );
  }

  listen(tell: () => void): WorkListener {
    this.local.on('work', tell);
    return {
      close: async () => {
        this.local.off('work', tell);
      },
    };
  }
}
