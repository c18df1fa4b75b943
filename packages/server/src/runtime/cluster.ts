import cluster, { type Worker } from 'node:cluster';
import { handleShutdown, type Shutdown, type ShutdownLog } from './shutdown';

/**
 * `WEB_CONCURRENCY=N`: one primary process forks N server processes that share one listener (node's
 * cluster module hands each new connection to the next process). The primary serves nothing and
 * opens no database: it starts the processes, restarts one that dies, and stops them all on SIGTERM
 * (docs/decisions/0059-every-core.md).
 */

/** What a server process tells the primary once it takes requests. */
interface ListeningMessage {
  type: 'svc:listening';
  port: number;
}
/** What the primary tells a server process to stop as SIGTERM would (a second signal would cut its stop short). */
const STOP_MESSAGE = { type: 'svc:stop' } as const;

/** A process that dies is replaced after this, doubling while replacements keep dying, up to the longest. */
export const FIRST_RESTART_MS = 1_000;
export const LONGEST_RESTART_MS = 30_000;
/** A replacement that has served this long resets the delay: the next death is a new incident. */
const STEADY_MS = 60_000;

export interface PrimaryOptions {
  readonly processes: number;
  /** The longest the stop may take (the server processes' own deadline, plus a margin). */
  readonly deadlineMs: number;
  readonly log: ShutdownLog;
  /** Once, when the first process listens: the banner. */
  readonly onListening: (port: number) => void;
}

/** In the primary: forks the server processes and looks after them until the stop, whose steps it answers (the processes' stop comes first). */
export function runPrimary({ processes, deadlineMs, log, onListening }: PrimaryOptions): Pick<Shutdown, 'onStop'> {
  const shutdown = handleShutdown({ deadlineMs, log });
  const live = new Set<Worker>();
  let announced = false;
  let restartMs = FIRST_RESTART_MS;
  let restartTimer: NodeJS.Timeout | undefined;

  /** Asks every process to stop and waits for them (each drains its requests and closes its pool). */
  const stopAll = async () => {
    clearTimeout(restartTimer);
    const exits = [...live].map((worker) => new Promise<void>((resolve) => worker.once('exit', () => resolve())));
    for (const worker of live) {
      if (worker.isConnected()) worker.send(STOP_MESSAGE);
      else worker.process.kill('SIGTERM');
    }
    await Promise.all(exits);
  };

  const fork = () => {
    const worker = cluster.fork();
    const pid = worker.process.pid;
    let listeningSince: number | undefined;
    live.add(worker);
    worker.on('message', (message: ListeningMessage) => {
      if (message?.type !== 'svc:listening') return;
      listeningSince = Date.now();
      if (!announced) {
        announced = true;
        onListening(message.port);
      }
    });
    worker.on('exit', (code, signal) => {
      live.delete(worker);
      if (shutdown.signal.aborted) {
        if (code !== 0) log.error(`server process ${pid} stopped with ${signal ? `signal ${signal}` : `exit code ${code}`}`);
        return;
      }
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      if (listeningSince === undefined) {
        // It could not start (its own line on stderr says why): the others would fail alike.
        log.error(`server process ${pid} could not start (${how}): stopping`);
        void stopAll().finally(() => process.exit(1));
        return;
      }
      if (Date.now() - listeningSince >= STEADY_MS) restartMs = FIRST_RESTART_MS;
      log.error(`server process ${pid} died (${how}): starting another in ${restartMs} ms`);
      restartTimer = setTimeout(fork, restartMs);
      restartMs = Math.min(restartMs * 2, LONGEST_RESTART_MS);
    });
  };

  shutdown.onStop(stopAll);
  for (let i = 0; i < processes; i++) fork();
  return shutdown;
}

/**
 * In a server process of the cluster, from its start: stops when the primary asks (unless a signal
 * of its own, such as Ctrl-C reaching the whole process group, began the stop already).
 */
export function joinCluster(stop: { readonly signal: AbortSignal; stop(): void }): void {
  if (!cluster.isWorker) return;
  process.on('message', (message: { type?: string }) => {
    if (message?.type === STOP_MESSAGE.type && !stop.signal.aborted) stop.stop();
  });
}

/** In a server process of the cluster: tells the primary it takes requests (the banner is the primary's). */
export function announceListening(port: number): void {
  if (cluster.isWorker) process.send?.({ type: 'svc:listening', port } satisfies ListeningMessage);
}

export const isClusterWorker = (): boolean => cluster.isWorker;
