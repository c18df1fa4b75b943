import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const REPOSITORY_ROOT = path.resolve(__dirname, '..', '..', '..', '..');
/** One lock per checkout: `pnpm pack` builds the package into its own dist/ (tsup cleans it first), so two packs of one checkout at once break each other. */
const LOCK = path.join(os.tmpdir(), `svc-pack-${createHash('sha256').update(REPOSITORY_ROOT).digest('hex').slice(0, 12)}.lock`);
const POLL_MS = 200;
const ABANDONED_WITHOUT_PID_MS = 10_000;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Whether the lock's owner is gone: its pid is no process, or it never wrote one (it died taking the lock). */
function abandoned(): boolean {
  try {
    const owner = Number(fs.readFileSync(path.join(LOCK, 'pid'), 'utf8'));
    return owner > 0 && !alive(owner);
  } catch {
    try {
      return Date.now() - fs.statSync(LOCK).mtimeMs > ABANDONED_WITHOUT_PID_MS;
    } catch {
      return false; // released meanwhile: try again
    }
  }
}

/**
 * Runs `work` while no other test process of this checkout packs @svc/contract or @svc/client (jest
 * runs test files in parallel workers). The lock is a directory holding its owner's pid: one left by
 * a process that died (a killed run) is taken over.
 */
export async function whilePacking<T>(work: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      fs.writeFileSync(path.join(LOCK, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (abandoned()) fs.rmSync(LOCK, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
  try {
    return await work();
  } finally {
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}
