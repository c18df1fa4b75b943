import type { ServiceProcess } from '../runtime/process';
import { handleShutdown, type Shutdown, type ShutdownLog } from '../runtime/shutdown';
import type { CommandRole, Stopping } from './context';
import { progressBar } from './output';
import { runCli } from './run';

/**
 * How long a stop may take: an attempt on the wire ends within its 15 s timeout and is then
 * recorded; a simulation batch commits within milliseconds.
 */
const STOP_DEADLINE_MS = 20_000;

/** A bar rewritten in place on stderr, a terminal only: a pipe or a log file gets no carriage returns. */
export function terminalProgress(stream: NodeJS.WriteStream): ((done: number, total: number) => void) | undefined {
  if (!stream.isTTY) return undefined;
  return (done, total) => {
    stream.write(`\r${progressBar(done, total)} steps`);
    if (done >= total) stream.write('\n');
  };
}

const describeError = (error: unknown): string => (error instanceof Error ? (error.stack ?? error.message) : String(error));

const stderrLine = (line: string) => process.stderr.write(`${line}\n`);

const stderrLog: ShutdownLog = {
  info: (message) => stderrLine(`svc: ${message}`),
  error: (message, error) => stderrLine(`svc: ${message}${error === undefined ? '' : `: ${describeError(error)}`}`),
};

/**
 * The command's process (runtime/process.ts), assembled when the command runs, in the role it
 * runs in (`CommandRole`), and only then: `svc help` and a malformed line read no settings, and
 * do not even load the settings' and database drivers' modules (most of the time `svc help` took
 * before; `require` keeps them out of the bundle's start).
 */
function processOnDemand() {
  let opened: Promise<ServiceProcess> | undefined;
  const database = () => require('./database') as typeof import('./database');
  const open = (role: CommandRole): Promise<ServiceProcess> => (opened ??= database().openProcess(role));
  const current = (): Promise<ServiceProcess> => {
    if (!opened) throw new Error('svc: the command asked for its services before its process was opened');
    return opened;
  };
  let closing: Promise<void> | undefined;
  return {
    deps: async (role: CommandRole) => (await open(role)).deps,
    services: async () => database().checkedServices(await current()),
    servicesWithMetrics: async () => {
      const process = await current();
      const services = await database().checkedServices(process);
      const metricsUrl = await database().servedMetrics(process);
      return metricsUrl ? { services, metricsUrl } : { services };
    },
    // Idempotent: the stop's step and the end of `main` may both close it.
    close: () =>
      (closing ??= opened
        ? opened.then(
            (process) => process.close(),
            () => undefined,
          )
        : Promise.resolve()),
  };
}

/**
 * `svc ...`. A long command that asks (`stopping`) gets the process's one way of stopping: on
 * SIGINT or SIGTERM it ends what it has under way, the pool closes and the process exits 0; a
 * second signal exits at once. Other commands keep the default: a signal ends them.
 */
async function main(): Promise<number> {
  const database = processOnDemand();
  let shutdown: Shutdown | undefined;
  let finished: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    finished = resolve;
  });
  const stopping = (): Stopping => {
    if (!shutdown) {
      shutdown = handleShutdown({ deadlineMs: STOP_DEADLINE_MS, log: stderrLog });
      shutdown.onStop(() => ended);
      shutdown.onStop(() => database.close());
    }
    return shutdown;
  };
  try {
    return await runCli(process.argv.slice(2), {
      deps: database.deps,
      worker: { services: database.services, servicesWithMetrics: database.servicesWithMetrics },
      stopping,
      out: (line) => process.stdout.write(`${line}\n`),
      err: stderrLine,
      progress: terminalProgress(process.stderr),
    });
  } finally {
    finished();
    // Once a stop has begun, its own steps close the pool and end the process.
    if (!shutdown?.signal.aborted) {
      shutdown?.release();
      await database.close();
    }
  }
}

/**
 * Runs the command line this process was started with, and sets its exit code. The bundle runs it
 * when it is the process's entry (`node dist/svc.js`); the package's `bin` (bin/svc.js, what
 * `pnpm exec svc` and an installed `svc` run) requires the bundle and calls it, since there the
 * bundle is not `require.main`.
 */
export function runCommandLine(): void {
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
      stderrLine(`svc: ${describeError(error)}`);
      process.exitCode = 1;
    },
  );
}

if (require.main === module) runCommandLine();
