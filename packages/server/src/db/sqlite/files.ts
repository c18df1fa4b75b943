import { EventEmitter } from 'node:events';
import path from 'node:path';
import { CheckEpoch } from './reader';

/**
 * What every pool open on one SQLite file in this process shares: it is one database, so a commit
 * through any of them is a commit for all. The check epoch moves on any of their writes (each
 * reader then looks at `PRAGMA data_version` again), and webhook work announced through one is heard
 * by the listeners of all. Another process's commits are seen when a request arrives
 * (`noteRequestArrival`) and by the dispatchers' poll.
 */
export interface SharedFile {
  readonly epoch: CheckEpoch;
  readonly announcements: EventEmitter;
}

interface OpenFile extends SharedFile {
  pools: number;
}

/** By absolute file name; an entry goes when the last pool on its file closes. */
const openFiles = new Map<string, OpenFile>();

/** The shared state of `filename`, for one more pool on it: give it back with {@link closeSharedFile}. */
export function openSharedFile(filename: string): SharedFile {
  const key = path.resolve(filename);
  let file = openFiles.get(key);
  if (!file) {
    file = { epoch: new CheckEpoch(), announcements: new EventEmitter().setMaxListeners(0), pools: 0 };
    openFiles.set(key, file);
  }
  file.pools += 1;
  return file;
}

export function closeSharedFile(filename: string): void {
  const key = path.resolve(filename);
  const file = openFiles.get(key);
  if (!file) return;
  file.pools -= 1;
  if (file.pools <= 0) openFiles.delete(key);
}
