import { systemClock } from '../core/clock';
import { loadConfig } from '../core/config';
import { createDatabase } from '../db/connection';
import { migrateToLatest } from '../db/migrate';
import { servicesFromConfig } from '../platform/services';
import { runCli } from './commands';
import { progressBar } from './output';

/** A bar rewritten in place on stderr, a terminal only: a pipe or a log file gets no carriage returns. */
export function terminalProgress(stream: NodeJS.WriteStream): ((done: number, total: number) => void) | undefined {
  if (!stream.isTTY) return undefined;
  return (done, total) => {
    stream.write(`\r${progressBar(done, total)} steps`);
    if (done >= total) stream.write('\n');
  };
}

/** `svc ...`: the admin CLI against the configured database (DATABASE_URL, or SQLite under DATA_DIR). */
async function main(): Promise<number> {
  const config = loadConfig();
  const db = createDatabase(config);
  try {
    await migrateToLatest(db);
    return await runCli(process.argv.slice(2), {
      deps: { db, clock: systemClock },
      worker: {
        services: () => servicesFromConfig(config, db),
        // `on`, not `once`: a signal sent to the process group also comes relayed by tsx, and a second one must not kill the worker mid-shutdown.
        untilStopped: () =>
          new Promise((resolve) => {
            process.on('SIGINT', () => resolve());
            process.on('SIGTERM', () => resolve());
          }),
      },
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
      progress: terminalProgress(process.stderr),
    });
  } finally {
    await db.destroy();
  }
}

if (require.main === module) {
  // `svc app list | head -1` closes the pipe early: that is the reader's choice, not a failure.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  // exitCode rather than process.exit: stdout, when a pipe, is flushed before the process ends.
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`svc: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
