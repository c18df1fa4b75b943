import closeWithGrace from 'close-with-grace';

/** What a stopping process reports as it goes; the server gives its JSON logger, the CLI its stderr. */
export interface ShutdownLog {
  info(message: string): void;
  error(message: string, error?: unknown): void;
}

export interface ShutdownOptions {
  /**
   * The longest the whole stop may take once a signal came. Past it the process exits 1, whatever is
   * still running: an orchestrator would kill it soon after anyway, and an exit that says so is better.
   */
  readonly deadlineMs: number;
  readonly log: ShutdownLog;
}

/** A step of the stop, run in the order registered; one that throws is logged and the next still runs. */
export type ShutdownStep = (signal: string | undefined) => Promise<void> | void;

/**
 * The one way a long-running process of this service stops (the server, `svc worker`, long CLI
 * commands): SIGTERM or SIGINT starts the stop, `signal` is aborted at once so loops notice, the
 * steps run in order, and the process exits 0 when they are done. A second SIGTERM or SIGINT exits 1
 * at once, unless it comes within `SAME_STOP_MS` of the first: then it is the same stop, delivered
 * twice (a terminal's Ctrl-C reaches every process of `pnpm start`, and pnpm forwards its own copy).
 * An uncaught exception or unhandled rejection is logged and stops the process the same way, with
 * exit code 1. Built on close-with-grace (docs/decisions/0051-probes-stop-and-timeouts.md).
 */
export interface Shutdown {
  /** Aborted when the stop begins: long work (a simulation, a dispatcher loop) checks it between batches. */
  readonly signal: AbortSignal;
  /** Resolves when the stop begins (a signal or `stop()`); `svc worker` waits on it. */
  readonly begun: Promise<void>;
  /** Adds a step; steps run in the order added. */
  onStop(step: ShutdownStep): void;
  /** Starts the stop as a signal would (a command that has finished its work). */
  stop(): void;
  /** Removes the process listeners without stopping: a short command that ended by itself. */
  release(): void;
}

/** A stop signal this soon after the stop began is the same stop, not a demand to exit at once. */
export const SAME_STOP_MS = 1000;

/** The signals this module answers itself (close-with-grace answers the others): their repeats are told apart by time. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

export function handleShutdown({ deadlineMs, log }: ShutdownOptions): Shutdown {
  const steps: ShutdownStep[] = [];
  const controller = new AbortController();
  let begin: () => void = () => undefined;
  const begun = new Promise<void>((resolve) => {
    begin = resolve;
  });
  let stoppingSince: number | undefined;
  let stopSignal: NodeJS.Signals | undefined;
  const onStopSignal = (signal: NodeJS.Signals) => {
    if (stoppingSince === undefined) {
      stopSignal = signal;
      listeners.close();
    } else if (Date.now() - stoppingSince >= SAME_STOP_MS) {
      log.error(`second ${signal}: exiting at once`);
      process.exit(1);
    }
  };
  const listeners = closeWithGrace(
    {
      delay: deadlineMs,
      // `beforeExit` is a short command ending by itself, not a stop: its exit code is its own.
      skip: ['beforeExit', ...STOP_SIGNALS],
      logger: false,
      onSecondSignal: (signal) => log.error(`second ${signal}: exiting at once`),
      onSecondError: (error) => log.error('a second uncaught error while stopping: exiting at once', error),
      onTimeout: (delay) => log.error(`the stop took longer than ${delay} ms: exiting`),
    },
    async ({ signal = stopSignal, err }) => {
      stoppingSince = Date.now();
      if (err) log.error('uncaught error: stopping', err);
      else log.info(signal ? `${signal} received: stopping` : 'stopping');
      controller.abort();
      begin();
      for (const step of steps) {
        try {
          await step(signal);
        } catch (error) {
          log.error('a step of the stop failed', error);
        }
      }
    },
  );
  for (const signal of STOP_SIGNALS) process.on(signal, onStopSignal);
  return {
    signal: controller.signal,
    begun,
    onStop: (step) => void steps.push(step),
    stop: () => listeners.close(),
    release: () => {
      listeners.uninstall();
      for (const signal of STOP_SIGNALS) process.removeListener(signal, onStopSignal);
    },
  };
}

/** Resolves after `ms`, or at once when `signal` is aborted (a delay a second look can cut short). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
