import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StartError } from '../../core/start-error';

/** The lock file in the data directory, and beside it the pid of the server holding it (for the message). */
export const SERVER_LOCK_FILE = 'server.lock';
export const SERVER_PID_FILE = 'server.pid';

export interface DataDirectoryClaim {
  /** Lets the lock go (the stop's last step; an exit or a crash lets it go too). */
  release(): void;
}

/** SQLITE_BUSY and its extended codes: another connection holds the lock. */
const isBusy = (error: unknown) => String((error as { code?: unknown } | null)?.code ?? '').startsWith('SQLITE_BUSY');

/**
 * One server process per SQLite data directory (docs/decisions/0058-api-quotas-and-one-sqlite-server.md).
 * The API quotas and the housekeeping of a server on SQLite live in its process, so a second server
 * on the same directory would double every quota: it refuses to start instead.
 *
 * The lock is SQLite's own file lock on `server.lock`, a tiny database of its own held in exclusive
 * locking mode by an open write: the operating system frees it when the process ends, however it
 * ends, so a crash leaves no stale lock to clear, and no pid is trusted. `svc` commands never open
 * this file: they work beside a running server on `store.sqlite`, whose writers wait for each other
 * (writers.ts).
 */
export function claimDataDirectory(dataDir: string): DataDirectoryClaim {
  fs.mkdirSync(dataDir, { recursive: true });
  const lock = new Database(path.join(dataDir, SERVER_LOCK_FILE), { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    // The first write takes the exclusive lock; in exclusive locking mode it is kept after the commit.
    lock.exec('create table if not exists holder (id integer primary key, pid integer)');
    lock.prepare('replace into holder (id, pid) values (1, ?)').run(process.pid);
  } catch (error) {
    lock.close();
    if (!isBusy(error)) throw error;
    throw new StartError(
      `another server is running on the SQLite data directory ${dataDir}${holderOf(dataDir)}: one server process per SQLite data directory (quotas and housekeeping live in it); stop it first, or use PostgreSQL (DATABASE_URL) for several processes`,
    );
  }
  const pidFile = path.join(dataDir, SERVER_PID_FILE);
  fs.writeFileSync(pidFile, `${process.pid}\n`);
  return {
    release() {
      if (!lock.open) return;
      fs.rmSync(pidFile, { force: true });
      lock.close();
    },
  };
}

/** ` (pid 1234)`, as the holder wrote it, or nothing when the file is gone or unreadable. */
function holderOf(dataDir: string): string {
  try {
    const pid = fs.readFileSync(path.join(dataDir, SERVER_PID_FILE), 'utf8').trim();
    return /^\d+$/.test(pid) ? ` (pid ${pid})` : '';
  } catch {
    return '';
  }
}
