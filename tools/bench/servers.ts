import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { builtServer, repositoryRoot } from '../testbed/repository';
import { type CpuTime, cpuTimeOfTree } from './proc';
import type { ChildMessage, ParentMessage, ReadyMessage } from './protocol';
import { serverCpusFromEnv } from './settings';

/**
 * The one way the bench starts a server under test, waits until it is ready, reads the CPU time it
 * used and stops it. A server is either
 * - a bench script (tools/bench/server.ts, hello.ts, first-start.ts, receiver.ts, or another
 *   worktree's server.ts), forked with an IPC channel over which it says `ready` and answers the
 *   bench (tools/bench/protocol.ts); or
 * - the built server (`node packages/server/dist/main.js`) with one or more processes
 *   (WEB_CONCURRENCY), as an image runs it: ready when every process says it listens and `/readyz`
 *   answers 200.
 * With BENCH_SERVER_CPUS the servers run on those CPUs and the load generator on the others.
 */

export interface ServerUnderTest {
  /** `http://127.0.0.1:<port>`. */
  readonly base: string;
  readonly pid: number;
  /** From the spawn to ready, in ms. */
  readonly startMs: number;
  /** The CPU time the server (all its threads and processes) has used so far. */
  cpu(): Promise<CpuTime>;
  /** Asks the server to stop, kills it if it has not within STOP_GRACE_MS, and removes what its start made. */
  stop(): Promise<void>;
  /** The built server's output so far (its log lines), until it is stopped; a bench script's goes to the bench's own. */
  log?(): string;
}

export interface BenchScriptServer<Ready extends ReadyMessage> extends ServerUnderTest {
  /** What the script said when it was ready. */
  readonly ready: Ready;
  tell(message: ParentMessage): void;
  /** The next message of this type; rejects if the server fails or exits first. */
  next<T extends ChildMessage['type']>(type: T): Promise<Extract<ChildMessage, { type: T }>>;
  /** Tells the server, and waits for its answer of this type. */
  ask<T extends ChildMessage['type']>(message: ParentMessage, answer: T): Promise<Extract<ChildMessage, { type: T }>>;
}

export interface BenchScript {
  /** A file name in tools/bench, or an absolute path. */
  readonly script: string;
  readonly env?: NodeJS.ProcessEnv;
  /** On BENCH_SERVER_CPUS (yes) or beside the load generator (the webhook receiver, which stands in for the world outside). */
  readonly onServerCpus?: boolean;
}

export interface BuiltServer {
  readonly built: {
    /** The server's settings (PATH, PORT and WEB_CONCURRENCY are added). */
    readonly env: Record<string, string>;
    /** WEB_CONCURRENCY (1). */
    readonly processes?: number;
    /** `node --enable-source-maps`, as the image runs it. */
    readonly sourceMaps?: boolean;
  };
}

/** Enough for a production server's SHUTDOWN_DELAY_MS (5 s) and its last requests. */
const STOP_GRACE_MS = 30_000;
const READY_POLL_MS = 10;

export function startServer<Ready extends ReadyMessage = ReadyMessage>(start: BenchScript): Promise<BenchScriptServer<Ready>>;
export function startServer(start: BuiltServer): Promise<ServerUnderTest>;
export async function startServer(start: BenchScript | BuiltServer): Promise<ServerUnderTest> {
  const launched = 'built' in start ? await launchBuilt(start.built) : launchScript(start);
  const { child } = launched;
  const serverCpus = serverCpusFromEnv();
  if (serverCpus && ('built' in start || start.onServerCpus !== false)) pin(child.pid as number, serverCpus);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        launched.askToStop();
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      launched.cleanUp();
    })();
    return stopping;
  };
  try {
    const base = await untilReady(child, launched.isReady);
    return { ...launched.extras(), base, pid: child.pid as number, startMs: performance.now() - launched.spawnedAt, cpu: launched.cpu, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What each kind of server does its own way. */
interface Launched {
  readonly child: ChildProcess;
  /** performance.now() right before the spawn. */
  readonly spawnedAt: number;
  /** The server's base URL once it is ready, else undefined; throws when it failed. */
  readonly isReady: () => Promise<string | undefined>;
  readonly cpu: () => Promise<CpuTime>;
  readonly askToStop: () => void;
  readonly cleanUp: () => void;
  /** What this kind adds to a ServerUnderTest, once it is ready. */
  readonly extras: () => object;
}

/** Polls until the server is ready; fails when its process exits first. */
async function untilReady(child: ChildProcess, isReady: () => Promise<string | undefined>): Promise<string> {
  for (;;) {
    const base = await isReady();
    if (base) return base;
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`The server process exited (${child.exitCode ?? child.signalCode}) before it was ready`);
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
}

/**
 * Forks a bench script. It inherits this process's `--import`/`--require` flags, which is how tsx
 * loads TypeScript; NODE_ENV=production as in a deployment.
 */
function launchScript({ script, env = {} }: BenchScript): Launched {
  const execArgv = process.execArgv.some((flag) => flag.includes('tsx')) ? process.execArgv : [...process.execArgv, '--import', 'tsx'];
  const spawnedAt = performance.now();
  const child = fork(path.isAbsolute(script) ? script : path.join(__dirname, script), [], {
    execArgv,
    env: { ...process.env, ...env, NODE_ENV: 'production' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let ready: ReadyMessage | undefined;
  let failure: unknown;
  void nextMessage(child, 'ready').then(
    (message) => {
      ready = message;
    },
    (error: unknown) => {
      failure = error;
    },
  );
  const tell = (message: ParentMessage) => child.send(message);
  const next = <T extends ChildMessage['type']>(type: T) => nextMessage(child, type);
  const ask = <T extends ChildMessage['type']>(message: ParentMessage, answer: T) => {
    const answered = next(answer);
    tell(message);
    return answered;
  };
  return {
    child,
    spawnedAt,
    isReady: async () => {
      if (failure) throw failure;
      return ready && `http://127.0.0.1:${ready.port}`;
    },
    cpu: async () => {
      const { user, system } = await ask({ type: 'cpu' }, 'cpu');
      return { total: user + system, system };
    },
    askToStop: () => (child.connected ? tell({ type: 'stop' }) : child.kill('SIGTERM')),
    cleanUp: () => undefined,
    extras: () => ({ ready, tell, next, ask }),
  };
}

/** The next message of this type from the child; rejects if it fails or exits first. */
function nextMessage<T extends ChildMessage['type']>(child: ChildProcess, type: T): Promise<Extract<ChildMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (message: ChildMessage) => {
      if (message.type === type) {
        cleanup();
        resolve(message as Extract<ChildMessage, { type: T }>);
      } else if (message.type === 'failed') {
        cleanup();
        reject(new Error(message.message));
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`The server process exited (code ${code}) before answering "${type}"`));
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/**
 * Spawns the built server on a free port with exactly these settings (plus PATH), the way an image
 * or a unit file would. Its output goes to a file: under load it logs a line per request, which
 * this process (the load generator) must not spend its CPU reading.
 */
async function launchBuilt({ env, processes = 1, sourceMaps = false }: BuiltServer['built']): Promise<Launched> {
  checkBuilt();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const logFile = path.join(os.tmpdir(), `svc-bench-${randomUUID()}.log`);
  const log = fs.openSync(logFile, 'w');
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...(sourceMaps ? ['--enable-source-maps'] : []), builtServer], {
    cwd: repositoryRoot,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), WEB_CONCURRENCY: String(processes), ...env },
    stdio: ['ignore', log, 'inherit'],
  });
  // With more than one, every process says it listens: the first alone answers /readyz already.
  const allListening = () => processes === 1 || (fs.readFileSync(logFile, 'utf8').match(/Server process \d+ listening/g) ?? []).length >= processes;
  return {
    child,
    spawnedAt,
    isReady: async () => {
      if (!allListening()) return undefined;
      const status = await fetch(`${base}/readyz`).then(
        async (response) => {
          await response.arrayBuffer();
          return response.status;
        },
        () => 0,
      );
      return status === 200 ? base : undefined;
    },
    cpu: async () => cpuTimeOfTree(child.pid as number),
    askToStop: () => child.kill('SIGTERM'),
    cleanUp: () => {
      fs.closeSync(log);
      fs.rmSync(logFile, { force: true });
    },
    extras: () => ({ log: () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '') }),
  };
}

/** Fails unless `pnpm build` has built the server. */
export function checkBuilt(): void {
  if (!fs.existsSync(builtServer)) throw new Error(`${builtServer} is missing: run pnpm build first`);
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });

/** Keeps a process (every thread, and the processes it forks later) on these CPUs. */
function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** With BENCH_SERVER_CPUS, keeps this process (the load generator) on the other CPUs. */
export function keepClientOffServerCpus(): void {
  const serverCpus = serverCpusFromEnv();
  if (!serverCpus) return;
  const named = new Set<number>();
  for (const part of serverCpus.split(',')) {
    const [from = 0, to = from] = part.split('-').map(Number);
    for (let cpu = from; cpu <= to; cpu += 1) named.add(cpu);
  }
  const clientCpus = os
    .cpus()
    .map((_cpu, index) => index)
    .filter((index) => !named.has(index))
    .join(',');
  if (clientCpus) pin(process.pid, clientCpus);
}
